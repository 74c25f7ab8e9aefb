import Foundation
import GRDB
import HeraldCore
import KasiaProtocol

/// SQLiteStore: rows.
extension SQLiteStore {
    static func device(_ db: Database, app: String, token: String) throws -> DeviceRecord? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM devices WHERE app_id = ? AND token = ?"), arguments: [app, token]
        ).map(deviceRecord)
    }

    /// A device from `SELECT devices.*` columns (table order) starting at `first`: read by position,
    /// since a name lookup per column costs more than the rest of the decoding when a fan-out
    /// reads 100,000 devices.
    static func deviceRecord(_ row: Row, from first: Int) -> DeviceRecord {
        StoreRows.device(
            rowID: row[first], app: row[first + 1], platform: row[first + 2], token: row[first + 3], deviceID: row[first + 4],
            createdAt: row[first + 5], updatedAt: row[first + 6], lastSeen: row[first + 7], disabledReason: row[first + 8],
            attributes: row[first + 10])
    }

    static func deviceRecord(_ row: Row) -> DeviceRecord { deviceRecord(row, from: 0) }

    /// The same from a row read straight off SQLite (`devices.*` from column `first`).
    static func deviceRecord(_ row: SQLiteRow, from first: Int32) -> DeviceRecord {
        StoreRows.device(
            rowID: row.integer(first), app: row.text(first + 1), platform: row.text(first + 2), token: row.text(first + 3),
            deviceID: row.optionalText(first + 4), createdAt: row.integer(first + 5), updatedAt: row.integer(first + 6),
            lastSeen: row.integer(first + 7), disabledReason: row.optionalText(first + 8), attributes: row.text(first + 10))
    }

    static func deviceRecord(_ row: SQLiteRow) -> DeviceRecord { deviceRecord(row, from: 0) }

    static func setState(
        _ db: Database, _ statements: WriterStatements, _ id: Int64, _ state: DeliveryState, reason: String?, now: Int64,
        counts: inout DeliveryCounts
    ) throws {
        let was = try counted(db, statements, id)
        // Once per outcome: its values are bound directly.
        let update = try statements.statement("UPDATE deliveries SET state = ?, last_reason = ?, lease_until = NULL, updated_at = ? WHERE id = ?", db)
        let values = SQLiteParameters(update)
        try values.text(1, state.rawValue)
        try values.text(2, reason)
        try values.integer(3, now)
        try values.integer(4, id)
        try values.execute()
        if let was { counts.move(from: was, to: (state, reason)) }
    }

    /// A retry: the delivery waits until `at`, its reason kept.
    static func retry(
        _ db: Database, _ statements: WriterStatements, _ id: Int64, at: Date, reason: String, now: Int64, counts: inout DeliveryCounts
    ) throws {
        let was = try counted(db, statements, id)
        try statements.statement(
            "UPDATE deliveries SET state = 'pending', next_attempt_at = ?, last_reason = ?, lease_until = NULL, updated_at = ? WHERE id = ?", db
        ).execute(arguments: [at.milliseconds, reason, now, id])
        if let was { counts.move(from: was, to: (.pending, reason)) }
    }

    /// A delivery's state and reason before an outcome changes them (nil: it is gone).
    static func counted(_ db: Database, _ statements: WriterStatements, _ id: Int64) throws -> (DeliveryState, String?)? {
        let values = SQLiteParameters(try statements.statement("SELECT state, last_reason FROM deliveries WHERE id = ?", db))
        try values.integer(1, id)
        return try values.firstRow { row in DeliveryState(rawValue: row.text(0)).map { ($0, row.optionalText(1)) } } ?? nil
    }

    static func replaceWatchSet(_ db: Database, deviceRowID: Int64, with set: WatchSet) throws {
        try db.cachedStatement(sql: "DELETE FROM watch_keys WHERE device_row = ?").execute(arguments: [deviceRowID])
        try db.cachedStatement(sql: "DELETE FROM contextual_routes WHERE device_row = ?").execute(arguments: [deviceRowID])
        let key = try db.cachedStatement(sql: "INSERT INTO watch_keys (device_row, role, key) VALUES (?, ?, ?)")
        for watched in set.watched { try key.execute(arguments: [deviceRowID, "watch", watched.description]) }
        for own in set.own { try key.execute(arguments: [deviceRowID, "own", own.string]) }
        let route = try db.cachedStatement(sql: "INSERT INTO contextual_routes (device_row, peer, alias) VALUES (?, ?, ?)")
        for (peer, aliases) in set.routes {
            for alias in aliases { try route.execute(arguments: [deviceRowID, peer.string, alias]) }
        }
    }

    /// Watch sets of several devices at once. Stored keys were validated when registered.
    static func watchSets(_ db: Database, for rowIDs: [Int64]) throws -> [Int64: WatchSet] {
        guard !rowIDs.isEmpty else { return [:] }
        var keys: [(Int64, String, String)] = []
        var routes: [(Int64, String, String)] = []
        for chunk in stride(from: 0, to: rowIDs.count, by: 500).map({ Array(rowIDs[$0..<min($0 + 500, rowIDs.count)]) }) {
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
            for row in try Row.fetchAll(
                db, sql: "SELECT device_row, role, key FROM watch_keys WHERE device_row IN (\(marks))",
                arguments: StatementArguments(chunk))
            {
                keys.append((row["device_row"], row["role"], row["key"]))
            }
            for row in try Row.fetchAll(
                db, sql: "SELECT device_row, peer, alias FROM contextual_routes WHERE device_row IN (\(marks))",
                arguments: StatementArguments(chunk))
            {
                routes.append((row["device_row"], row["peer"], row["alias"]))
            }
        }
        return StoreRows.watchSets(for: rowIDs, keys: keys, routes: routes)
    }
}
