import Crypto
import Foundation
import GRDB

/// The dedupe keys of the events a SQLite store holds, kept in memory on the writer's connection.
///
/// A dedupe key is a hash (a Matrix event per pushkey, a Kasia transaction), so a unique index on
/// the file would take each new key on a random page: read back when the cache has lost it,
/// written whole to the WAL at the commit and again at the checkpoint, more of them as the file
/// grows. The keys sit in a `TEMP` table in memory instead (one writer per file: `herald serve`
/// holds it alone), claimed in the same transaction as the event, so a rolled-back commit takes
/// its claims back. The file keeps each key in its event's row, and the retention index
/// (`events_created`, in time order) carries it, so opening the store reads them back from that
/// index alone. A key holds as long as its event is kept, as a unique index's would: the
/// trigger forgets it when the event is deleted. About 27 bytes of memory a key.
///
/// PostgreSQL keeps its unique index: its instances share the table.
enum SQLiteDedupeKeys {
    /// The 16 bytes a key is remembered by: the first half of its SHA-256. Two keys would share
    /// them with odds of about n² / 2¹²⁹ for n keys held at once, so a distinct event is never
    /// taken for a repeat in practice; the key itself would cost several times the memory.
    static func digest(_ key: String) -> [UInt8] {
        var key = key
        // Hashed over the string's own UTF-8 (made contiguous if it was bridged): no copy to hash.
        let hash = key.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
        return hash.withUnsafeBytes { Array($0.prefix(16)) }
    }

    /// Claims `key` in the writer's open transaction: true when it was free (its event goes in),
    /// false when a stored event holds it. A rolled-back transaction takes the claim back.
    static func claim(_ key: String, _ db: Database, _ statements: WriterStatements) throws -> Bool {
        let statement = try statements.statement("INSERT INTO temp.dedupe_keys (digest) VALUES (?) ON CONFLICT DO NOTHING", db)
        let values = SQLiteParameters(statement)
        try values.blob(1, digest(key))
        try values.execute()
        return db.changesCount == 1
    }

    /// Makes the writer's table and fills it from the file: after the migrations, before the
    /// first write. Runs again harmlessly (a second `migrate()` refills it).
    static func load(_ db: Database) throws {
        // The table lives in memory: a temporary file would be one more file to write.
        try db.execute(sql: "PRAGMA temp_store = MEMORY")
        db.add(function: DatabaseFunction("herald_dedupe_digest", argumentCount: 1, pure: true) { values in
            String.fromDatabaseValue(values[0]).map { Data(digest($0)) }
        })
        try db.execute(
            sql: """
                CREATE TEMP TABLE IF NOT EXISTS dedupe_keys (digest BLOB PRIMARY KEY) WITHOUT ROWID;
                CREATE TEMP TRIGGER IF NOT EXISTS dedupe_keys_forget AFTER DELETE ON main.events WHEN OLD.dedupe_key IS NOT NULL BEGIN
                  DELETE FROM dedupe_keys WHERE digest = herald_dedupe_digest(OLD.dedupe_key);
                END;
                DELETE FROM temp.dedupe_keys;
                INSERT INTO temp.dedupe_keys (digest)
                  SELECT herald_dedupe_digest(dedupe_key) FROM main.events INDEXED BY events_created WHERE dedupe_key IS NOT NULL
                  ON CONFLICT DO NOTHING;
                """)
    }
}
