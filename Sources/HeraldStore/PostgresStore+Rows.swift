import HeraldCore
import KasiaProtocol
import Logging
import PostgresNIO

/// PostgresStore: rows.
extension PostgresStore {
    static let deviceColumns =
        "id, app_id, platform, token, device_id, created_at, updated_at, last_seen, disabled_reason, attributes"

    static func device(_ row: PostgresRow, from first: Int) throws -> DeviceRecord {
        let cells = Array(row)
        func cell<T: PostgresDecodable>(_ i: Int, _ type: T.Type) throws -> T { try cells[first + i].decode(T.self) }
        return StoreRows.device(
            rowID: try cell(0, Int64.self), app: try cell(1, String.self), platform: try cell(2, String.self),
            token: try cell(3, String.self), deviceID: try cell(4, String?.self),
            createdAt: try cell(5, Int64.self), updatedAt: try cell(6, Int64.self), lastSeen: try cell(7, Int64.self),
            disabledReason: try cell(8, String?.self), attributes: try cell(9, String.self))
    }

    static func devices(_ rows: PostgresRowSequence) async throws -> [DeviceRecord] {
        var out: [DeviceRecord] = []
        for try await row in rows { out.append(try device(row, from: 0)) }
        return out
    }

    static func count(_ rows: PostgresRowSequence) async throws -> Int {
        var n = 0
        for try await _ in rows { n += 1 }
        return n
    }

    static func replaceWatchSet(_ db: PostgresConnection, deviceRowID: Int64, with set: WatchSet, logger: Logger) async throws {
        try await db.query("DELETE FROM watch_keys WHERE device_row = \(deviceRowID)", logger: logger)
        try await db.query("DELETE FROM contextual_routes WHERE device_row = \(deviceRowID)", logger: logger)
        let roles = set.watched.map { _ in "watch" } + set.own.map { _ in "own" }
        let keys = set.watched.map(\.description) + set.own.map(\.string)
        if !keys.isEmpty {
            try await db.query(
                "INSERT INTO watch_keys (device_row, role, key) SELECT \(deviceRowID), r, k FROM unnest(\(roles)::TEXT[], \(keys)::TEXT[]) AS t(r, k)",
                logger: logger)
        }
        let routes = set.routes.flatMap { peer, aliases in aliases.map { (peer.string, $0) } }
        if !routes.isEmpty {
            try await db.query(
                """
                INSERT INTO contextual_routes (device_row, peer, alias)
                SELECT \(deviceRowID), p, a FROM unnest(\(routes.map(\.0))::TEXT[], \(routes.map(\.1))::TEXT[]) AS t(p, a)
                """, logger: logger)
        }
    }
}
