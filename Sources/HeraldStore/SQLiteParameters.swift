import GRDB
import GRDBSQLite

/// Values bound straight to a prepared statement's parameters (1-based), and the statement
/// stepped here, for the statements run once per event, delivery or outcome. GRDB's
/// `StatementArguments` boxes each value in an existential, converts it to a `DatabaseValue` and
/// checks the count on every execution (about a tenth of a batched event's CPU in its two
/// inserts), and its `execute()` resets the statement twice, clears its bindings and consults its
/// observers, which the store does not use, for each row written.
///
/// A bind that fails (an index out of range, a statement not reset, a value over SQLite's length
/// limit, no memory) throws, so the read or the transaction it is part of fails and nothing else.
struct SQLiteParameters {
    let statement: OpaquePointer

    init(_ statement: OpaquePointer) { self.statement = statement }

    /// A statement GRDB prepared (and keeps in its cache), reset for new values.
    init(_ statement: Statement) {
        self.statement = statement.sqliteStatement
        reset()
    }

    /// SQLite copies the text before `bind` returns (`SQLITE_TRANSIENT`, a macro Swift cannot import).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Makes a statement that ran ready for new values: SQLite refuses a bind until it is reset.
    func reset() { sqlite3_reset(statement) }

    func text(_ index: Int32, _ value: String?) throws(SQLiteCallError) {
        guard let value else { return try null(index) }
        // `withCString` lends a native string's own bytes; passing the String as the pointer
        // argument would copy it into a new array first.
        try check(value.withCString { sqlite3_bind_text(statement, index, $0, -1, Self.transient) }, index)
    }

    func integer(_ index: Int32, _ value: Int64?) throws(SQLiteCallError) {
        guard let value else { return try null(index) }
        try check(sqlite3_bind_int64(statement, index, value), index)
    }

    func blob(_ index: Int32, _ value: [UInt8]) throws(SQLiteCallError) {
        guard let count = Int32(exactly: value.count) else { return try check(SQLITE_TOOBIG, index) }
        // An empty array's buffer may have no address, which SQLite would store as NULL.
        let code = value.withUnsafeBytes { bytes in
            sqlite3_bind_blob(statement, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), count, Self.transient)
        }
        try check(code, index)
    }

    func null(_ index: Int32) throws(SQLiteCallError) { try check(sqlite3_bind_null(statement, index), index) }

    /// Steps the bound statement once: its first row read by `decode`, or nil when it has none.
    /// The statement is reset before this returns, so no read outlives the call.
    func firstRow<T>(_ decode: (SQLiteRow) -> T) throws(SQLiteCallError) -> T? {
        defer { reset() }
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return decode(SQLiteRow(statement: statement))
        case SQLITE_DONE: return nil
        case let code: throw failure(code)
        }
    }

    /// Runs the bound write to its end, inside the writer's open transaction, and resets it. An
    /// error (SQLite's extended code) leaves the transaction to the caller, which rolls it back;
    /// with no transaction open (SQLite ends one itself on some errors) nothing is written.
    func execute() throws(SQLiteCallError) {
        defer { reset() }
        let db = sqlite3_db_handle(statement)
        guard sqlite3_get_autocommit(db) == 0 else {
            throw SQLiteCallError(code: SQLITE_MISUSE, message: "a store write outside the writer's transaction")
        }
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_DONE: return
            case SQLITE_ROW: continue
            case let code: throw failure(code)
            }
        }
    }

    /// Steps the bound statement to its end: every row read by `decode`, in order. The
    /// statement is reset before this returns, so no read outlives the call.
    func rows<T>(_ decode: (SQLiteRow) throws -> T) throws -> [T] {
        defer { reset() }
        var found: [T] = []
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW: found.append(try decode(SQLiteRow(statement: statement)))
            case SQLITE_DONE: return found
            case let code: throw failure(code)
            }
        }
    }

    /// A step's error, with the connection's message.
    private func failure(_ code: Int32) -> SQLiteCallError {
        SQLiteCallError(code: code, message: String(cString: sqlite3_errmsg(sqlite3_db_handle(statement))))
    }

    private func check(_ code: Int32, _ index: Int32) throws(SQLiteCallError) {
        guard code == SQLITE_OK else {
            throw SQLiteCallError(code: code, message: "parameter \(index): " + String(cString: sqlite3_errstr(code)))
        }
    }
}
