import GRDBSQLite

/// Values bound straight to a prepared statement's parameters (1-based), for the statements run
/// once per event or delivery. GRDB's `StatementArguments` boxes each value in an existential,
/// converts it to a `DatabaseValue` and checks the count on every execution: about a tenth of a
/// batched event's CPU in its two inserts.
///
/// `sqlite3_bind_*` fails only for a parameter index out of range or a statement in use, both
/// programming errors here, so a failure stops the process as GRDB's own binding does.
struct SQLiteParameters {
    let statement: OpaquePointer

    init(_ statement: OpaquePointer) { self.statement = statement }

    /// SQLite copies the text before `bind` returns (`SQLITE_TRANSIENT`, a macro Swift cannot import).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Makes a statement that ran ready for new values: SQLite refuses a bind until it is reset.
    func reset() { sqlite3_reset(statement) }

    func text(_ index: Int32, _ value: String?) {
        guard let value else { return null(index) }
        check(sqlite3_bind_text(statement, index, value, -1, Self.transient), index)
    }

    func integer(_ index: Int32, _ value: Int64?) {
        guard let value else { return null(index) }
        check(sqlite3_bind_int64(statement, index, value), index)
    }

    func blob(_ index: Int32, _ value: [UInt8]) {
        // An empty array's buffer may have no address, which SQLite would store as NULL.
        let code = value.withUnsafeBytes { bytes in
            sqlite3_bind_blob(statement, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count), Self.transient)
        }
        check(code, index)
    }

    func null(_ index: Int32) { check(sqlite3_bind_null(statement, index), index) }

    private func check(_ code: Int32, _ index: Int32) {
        precondition(code == SQLITE_OK, "SQLite refused parameter \(index): \(String(cString: sqlite3_errstr(code)))")
    }
}
