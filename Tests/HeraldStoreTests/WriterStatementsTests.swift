import GRDB
@testable import HeraldStore
import Testing

@Suite("The writer's statements")
struct WriterStatementsTests {
    @Test("one statement per SQL text and connection, GRDB's own; one GRDB drops is prepared again, not kept alive")
    func followsGRDBsCache() throws {
        let statements = WriterStatements()
        let first = try DatabaseQueue()
        let second = try DatabaseQueue()
        for queue in [first, second] {
            try queue.write { db in try db.execute(sql: "CREATE TABLE t (v INTEGER)") }
        }
        try first.writeWithoutTransaction { db in
            let insert = try statements.statement("INSERT INTO t (v) VALUES (?)", db)
            #expect(try statements.statement("INSERT INTO t (v) VALUES (?)", db) === insert)
            #expect(try db.cachedStatement(sql: "INSERT INTO t (v) VALUES (?)") === insert)
            try insert.execute(arguments: [1])
        }
        // The same text on another connection is that connection's statement.
        try second.writeWithoutTransaction { db in
            try statements.statement("INSERT INTO t (v) VALUES (?)", db).execute(arguments: [2])
        }
        #expect(try first.read { db in try Int.fetchAll(db, sql: "SELECT v FROM t") } == [1])
        #expect(try second.read { db in try Int.fetchAll(db, sql: "SELECT v FROM t") } == [2])
        try first.writeWithoutTransaction { db in
            weak var dropped = try statements.statement("INSERT INTO t (v) VALUES (?)", db)
            #expect(dropped != nil)
            // A schema change empties GRDB's cache: the statement goes with it.
            try db.execute(sql: "CREATE TABLE u (w INTEGER)")
            db.clearSchemaCache()
            #expect(dropped == nil)
            try statements.statement("INSERT INTO t (v) VALUES (?)", db).execute(arguments: [3])
        }
        #expect(try first.read { db in try Int.fetchAll(db, sql: "SELECT v FROM t ORDER BY v") } == [1, 3])
    }
}
