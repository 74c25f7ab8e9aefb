import CHeraldSQLite
import Foundation
import GRDB
public import HeraldPushCore

/// The `Store` on one SQLite file in WAL mode. Its SQL is the kind PostgreSQL also runs, so
/// the PostgreSQL store can share the statements.
public final class SQLiteStore: Store {
    let pool: DatabasePool
    /// The publish and notify paths' reads, outside GRDB's pool.
    let readers: SQLiteReaders
    /// Enqueues, the lanes' claims and their outcomes, committed together: one WAL sync for
    /// whatever arrived meanwhile.
    let writes: GroupCommit<GroupedWrite, GroupedResult>
    /// The writer's statements on the paths each event and outcome takes.
    let statements: WriterStatements
    /// Every lane's prefix of `deliveries_lane_due` (app, platform), so a query by state alone
    /// seeks each lane's deliveries in that state instead of scanning the table: SQLite has no
    /// index by state alone (`v11-sqlite` dropped it).
    let everyLane: String
    /// The platforms of `everyLane`, as an SQL list: one app's lanes are `app_id = ? AND platform IN (…)`.
    let lanePlatforms: String

    /// SQLite's process-wide settings, before the first store's connections initialize SQLite.
    /// Memory statistics off (later, SQLite refuses the setting, and it stays on: slower, no
    /// different): counting them takes a process-wide mutex on each of SQLite's allocations and
    /// frees. Each WAL frame in one write instead of two (`CHeraldSQLite`): those writes were two
    /// fifths of a Matrix notify's system calls.
    private static let processSettings: Void = {
        _ = herald_sqlite_disable_memory_statistics()
        _ = herald_sqlite_join_wal_frame_writes()
    }()

    /// Opens (creating if needed) the database at `path`. Call `migrate()` before use.
    /// - Parameter platforms: the push services whose lanes the expiry sweep and `queues()` cover.
    public init(path: String, platforms: [Platform] = Platform.builtIn) throws {
        // The database holds every device token: readable by its owner only. SQLite gives its WAL
        // and shared-memory files the database file's mode, so creating it 0600 covers all three.
        if !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") {
            let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 { Glibc.close(fd) }
        }
        _ = Self.processSettings
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(10)
        let pool = try DatabasePool(path: path, configuration: configuration)
        self.pool = pool
        let names = platforms.map { "'" + $0.rawValue.replacingOccurrences(of: "'", with: "''") + "'" }
        lanePlatforms = "(" + names.joined(separator: ", ") + ")"
        everyLane = "app_id IN (SELECT id FROM apps) AND platform IN \(lanePlatforms)"
        readers = SQLiteReaders(path: path)
        let statements = WriterStatements()
        self.statements = statements
        writes = GroupCommit { group in await Self.commit(group, pool: pool, statements: statements) }
        // GRDB sets NORMAL with WAL, which survives a crashed process but may lose the last commits
        // on power loss. An accepted event must be on disk before its 2xx: sync the WAL at each commit.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
    }

    /// A read on the calling thread, outside a transaction (`DispatchQueue.sync` runs the block
    /// on the caller, and a WAL read never waits for the writer). Each statement sees a committed
    /// state. The hot paths' reads go to `readers` instead.
    func readHere<T>(_ body: (Database) throws -> T) throws -> T { try pool.unsafeRead(body) }

    /// The writer's `PRAGMA synchronous` (2 = FULL).
    public func synchronousMode() async throws -> Int {
        try await pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    public func migrate() async throws {
        try await migrate(upTo: nil)
    }

    /// The schema up to and including `version` (nil: every version): a database as an older
    /// Herald left it, for the migration tests.
    package func migrate(upTo version: String?) async throws {
        var migrator = DatabaseMigrator()
        for (version, sql) in Schema.versions {
            migrator.registerMigration(version) { db in try db.execute(sql: sql) }
        }
        migrator.registerMigration(Schema.countersVersion) { db in try db.execute(sql: Schema.sqliteCounters) }
        for (version, sql) in Schema.laterVersions + Schema.sqliteLaterVersions + Schema.routeVersions + Schema.sqliteRouteLaterVersions {
            migrator.registerMigration(version) { db in try db.execute(sql: sql) }
        }
        if let version { return try migrator.migrate(pool, upTo: version) }
        let registered = migrator
        let complete = try await pool.read { db in try registered.hasCompletedMigrations(db) }
        try migrator.migrate(pool)
        try await pool.writeWithoutTransaction { db in
            // A migration that copied a table (v19-sqlite: a million events, 650 MB) left its pages
            // in the WAL file, which keeps its size after a checkpoint: give the space back.
            if !complete { try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            try SQLiteDedupeKeys.load(db)
        }
    }

}
