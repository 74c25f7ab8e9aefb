import GRDB
import GRDBSQLite
@testable import HeraldStore
import Testing

@Suite("Statements bound and stepped outside GRDB")
struct SQLiteParametersTests {
    static func database() throws -> DatabaseQueue {
        let queue = try DatabaseQueue()
        try queue.write { db in
            try db.execute(sql: "CREATE TABLE p (id INTEGER PRIMARY KEY)")
            try db.execute(sql: "CREATE TABLE t (v INTEGER PRIMARY KEY, parent INTEGER REFERENCES p (id), data BLOB)")
            try db.execute(sql: "INSERT INTO p (id) VALUES (1)")
        }
        return queue
    }

    @Test("a write runs in the open transaction and its statement takes the next values; a constraint names SQLite's extended code and the transaction goes on")
    func writesInTransaction() throws {
        let queue = try Self.database()
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE TRANSACTION")
            let values = SQLiteParameters(try db.cachedStatement(sql: "INSERT INTO t (v, parent, data) VALUES (?, ?, ?)"))
            for v in [10, 11] as [Int64] {
                try values.integer(1, v)
                try values.integer(2, 1)
                try values.blob(3, [UInt8(v)])
                try values.execute()
            }
            try values.integer(1, 12)
            try values.integer(2, 99)
            try values.blob(3, [])
            let refused = #expect(throws: SQLiteCallError.self) { try values.execute() }
            #expect(refused?.code == ResultCode.SQLITE_CONSTRAINT_FOREIGNKEY.rawValue)
            // Only that statement was undone: the next one runs in the same transaction.
            try values.integer(1, 13)
            try values.integer(2, 1)
            try values.blob(3, [])
            try values.execute()
            try db.execute(sql: "COMMIT TRANSACTION")
        }
        let rows = try queue.read { db in
            try SQLiteParameters(db.cachedStatement(sql: "SELECT v, data FROM t ORDER BY v")).rows { ($0.integer(0), $0.bytes(1)) }
        }
        #expect(rows.map(\.0) == [10, 11, 13])
        #expect(rows.map(\.1) == [[10], [11], []])
    }

    @Test("a write with no transaction open is refused and writes nothing")
    func refusedOutsideTransaction() throws {
        let queue = try Self.database()
        try queue.writeWithoutTransaction { db in
            let values = SQLiteParameters(try db.cachedStatement(sql: "INSERT INTO t (v, parent) VALUES (?, 1)"))
            try values.integer(1, 20)
            let refused = #expect(throws: SQLiteCallError.self) { try values.execute() }
            #expect(refused?.code == SQLITE_MISUSE)
        }
        #expect(try queue.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM t") } == 0)
    }
}
