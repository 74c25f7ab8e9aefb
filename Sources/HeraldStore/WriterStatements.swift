import GRDB
import Synchronization

/// The writer connection's statements on the paths each event and outcome takes, found by where
/// their SQL text sits in the binary. GRDB's `cachedStatement(sql:)` finds one by hashing its
/// whole text, about 1,200 instructions for an insert's, several times an event.
///
/// GRDB's cache still owns each statement; this keeps a weak reference to it. A statement GRDB
/// drops (one that failed, every one on a schema change or when the connection closes) is
/// looked up there again, and none outlives its connection.
final class WriterStatements: Sendable {
    /// Used on the writer's queue only, as the statement is.
    private struct Entry: @unchecked Sendable {
        let sql: UInt
        let database: ObjectIdentifier
        weak var statement: Statement?
    }

    /// A statement handed out of the lock, to the writer's queue that asked for it.
    private struct Found: @unchecked Sendable {
        let statement: Statement
    }

    /// A dozen or so: a scan finds one sooner than a hash of its address would.
    private let entries = Mutex<[Entry]>([])

    init() {}

    /// The prepared statement of `sql` on `db` (the writer connection).
    func statement(_ sql: StaticString, _ db: Database) throws -> Statement {
        let key = UInt(bitPattern: sql.utf8Start)
        let database = ObjectIdentifier(db)
        let found = entries.withLock { entries -> Found? in
            for i in entries.indices where entries[i].sql == key && entries[i].database == database {
                return entries[i].statement.map(Found.init)
            }
            return nil
        }
        if let found { return found.statement }
        let statement = try db.cachedStatement(sql: sql.description)
        entries.withLock { entries in
            entries.removeAll { $0.sql == key }
            entries.append(Entry(sql: key, database: database, statement: statement))
        }
        return statement
    }
}
