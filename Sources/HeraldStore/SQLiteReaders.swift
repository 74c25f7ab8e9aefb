import GRDBSQLite
import Synchronization

/// Read-only connections to the store's SQLite file for the reads on the publish and notify
/// paths (routing, admitting a Matrix pushkey), run on the caller's thread with statements
/// prepared once per connection.
///
/// GRDB's pool costs more than these reads: a `DispatchQueue.sync` per read and one per
/// connection checkout, a key path built per checkout, and a `PRAGMA schema_version` query (a
/// second read transaction, with its own locks and WAL read) before each one. Each statement
/// here is its own read transaction, seeing the last commit, as with `unsafeRead`.
final class SQLiteReaders: Sendable {
    private let path: String
    private let idle: Mutex<(connections: [Connection], closed: Bool)>
    /// Connections kept open between reads; more run at once when callers need them.
    private let maximumIdle: Int

    init(path: String, maximumIdle: Int = 8) {
        self.path = path
        self.maximumIdle = maximumIdle
        idle = Mutex(([], false))
    }

    /// Runs `body` on a connection of its own, on the calling thread.
    func read<T>(_ body: (SQLiteReadConnection) throws -> T) throws -> T {
        let connection = try idle.withLock { state -> Connection? in
            if state.closed { throw SQLiteCallError(code: SQLITE_MISUSE, message: "the store is closed") }
            return state.connections.popLast()
        } ?? Connection(path: path)
        defer {
            let keep = idle.withLock { state in
                guard !state.closed, state.connections.count < maximumIdle else { return false }
                state.connections.append(connection)
                return true
            }
            if !keep { connection.close() }
        }
        return try body(SQLiteReadConnection(connection: connection))
    }

    /// Closes the idle connections; one in use closes when its read ends.
    func close() {
        let connections = idle.withLock { state in
            state.closed = true
            defer { state.connections = [] }
            return state.connections
        }
        for connection in connections { connection.close() }
    }

    /// One `sqlite3` handle and its prepared statements, used by one thread at a time.
    final class Connection: @unchecked Sendable {
        let handle: OpaquePointer
        var statements: [String: OpaquePointer] = [:]

        init(path: String) throws {
            var handle: OpaquePointer?
            let code = sqlite3_open_v2(path, &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
            guard code == SQLITE_OK, let handle else {
                let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
                sqlite3_close_v2(handle)
                throw SQLiteCallError(code: code, message: message)
            }
            self.handle = handle
            // The writer holds the write lock only while it commits; a reader waits on it only
            // while the WAL is recovered after a crash.
            sqlite3_busy_timeout(handle, 10_000)
        }

        func statement(_ sql: String) throws -> OpaquePointer {
            if let cached = statements[sql] { return cached }
            var statement: OpaquePointer?
            let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
            guard code == SQLITE_OK, let statement else { throw SQLiteCallError(code: code, message: String(cString: sqlite3_errmsg(handle))) }
            statements[sql] = statement
            return statement
        }

        func close() {
            for statement in statements.values { sqlite3_finalize(statement) }
            statements = [:]
            sqlite3_close_v2(handle)
        }
    }
}

/// A reader's connection for the length of one `read`.
struct SQLiteReadConnection {
    fileprivate let connection: SQLiteReaders.Connection

    /// Every row `sql` gives for `arguments` (all text: the hot reads bind nothing else), each
    /// read by `decode`. The statement is reset before this returns, so no read transaction
    /// outlives it (an open one would hold the WAL back from being checkpointed).
    func rows<T>(_ sql: String, _ arguments: [String], _ decode: (SQLiteRow) -> T) throws -> [T] {
        let statement = try connection.statement(sql)
        // `rows` resets the statement; no argument outlives the read either.
        defer { sqlite3_clear_bindings(statement) }
        let parameters = SQLiteParameters(statement)
        for (i, argument) in arguments.enumerated() { try parameters.text(Int32(i + 1), argument) }
        return try parameters.rows(decode)
    }
}

/// The current row of a stepping statement, read by column position.
struct SQLiteRow {
    let statement: OpaquePointer

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

    func text(_ column: Int32) -> String {
        guard let bytes = sqlite3_column_text(statement, column) else { return "" }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    func optionalText(_ column: Int32) -> String? { isNull(column) ? nil : text(column) }

    func optionalInteger(_ column: Int32) -> Int64? { isNull(column) ? nil : integer(column) }

    /// A blob's bytes (or a text's); none for NULL.
    func bytes(_ column: Int32) -> [UInt8] {
        // The pointer first, then its length: SQLite's documented order.
        guard let bytes = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, column))))
    }
}

/// A failed call into SQLite made outside GRDB (a read, a bind), with SQLite's code and message.
struct SQLiteCallError: Error, CustomStringConvertible {
    var code: Int32
    var message: String
    var description: String { "SQLite error \(code): \(message)" }
}
