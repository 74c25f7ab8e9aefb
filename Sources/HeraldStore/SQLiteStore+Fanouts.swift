public import Foundation
import GRDB
public import HeraldCore
import HeraldPushCore

/// SQLiteStore: fan-out jobs.
extension SQLiteStore {
    public func openFanouts(limit: Int) async throws -> [FanoutJob] {
        // Polled every second by an idle expander: the statement is prepared once per connection.
        try await pool.read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT f.event_id, f.app_id, e.template, e.push_type, e.priority, e.collapse_id, e.payload, e.fcm_data, e.expires_at,
                           e.created_at, e.request_id, f.keys, f.excluded, f.kasia, f.key_index, f.cursor_row, f.devices, f.expanded,
                           e.coalesce_key, e.coalesce_ms
                    FROM fanouts f JOIN events e ON e.id = f.event_id
                    WHERE f.finished_at IS NULL ORDER BY f.created_at, f.event_id LIMIT ?
                    """), arguments: [limit]
            ).compactMap { row -> FanoutJob? in
                guard let route = FanoutRoute(keys: row[11], excluded: row[12], kasia: row[13]) else { return nil }
                let payload: Data = row[6]
                return FanoutJob(
                    eventID: row[0], app: row[1], template: row[2],
                    push: RenderedPush(
                        storedPushType: row[3], storedPriority: row[4], collapseID: row[5], payload: Array(payload),
                        fcmData: RenderedPush.fcmData(json: row[7])),
                    expiresAt: Date(milliseconds: row[8]), createdAt: Date(milliseconds: row[9]), requestID: row[10], route: route,
                    cursor: FanoutCursor(keyIndex: row[14], row: row[15]), devices: row[16], expanded: row[17],
                    coalescing: Coalescing(storedKey: row[18], window: row[19]))
            }
        }
    }

    public func fanoutCandidates(app: String, key: String, after row: Int64, limit: Int) async throws -> FanoutCandidates {
        let limit = max(1, limit)
        return try readers.read { db in
            // Each source in device order off its (key, device_row) index, `limit` at most: a page
            // costs its own size, wherever the cursor is.
            let watching = try db.rows(
                "SELECT DISTINCT device_row FROM watch_keys WHERE key = ? AND device_row > ? ORDER BY device_row LIMIT \(limit)",
                [key, String(row)]) { $0.integer(0) }
            let routed = try db.rows(
                "SELECT DISTINCT device_row FROM contextual_routes WHERE peer = ? AND device_row > ? ORDER BY device_row LIMIT \(limit)",
                [key, String(row)]) { $0.integer(0) }
            let page = FanoutCandidates.page(watching, routed, after: row, limit: limit)
            guard !page.rows.isEmpty else { return FanoutCandidates(devices: [], through: page.through, exhausted: page.exhausted) }
            let list = String(decoding: JSONValue.array(page.rows.map { .int($0) }).encoded, as: UTF8.self)
            // By row id alone (`+app_id` keeps SQLite off the app's index, which it would scan whole).
            let devices = try db.rows(
                "SELECT * FROM devices WHERE id IN (SELECT value FROM json_each(?)) AND +app_id = ? AND disabled_reason IS NULL ORDER BY id",
                [list, app], Self.deviceRecord)
            return FanoutCandidates(devices: devices, through: page.through, exhausted: page.exhausted)
        }
    }

    public func watcherCount(key: String, limit: Int) async throws -> Int {
        try readers.read { db in
            let bound = String(max(0, limit))
            return try db.rows(
                """
                SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM watch_keys WHERE key = ?1 LIMIT ?2))
                     + (SELECT COUNT(*) FROM (SELECT 1 FROM contextual_routes WHERE peer = ?1 LIMIT ?2))
                """, [key, bound]) { $0.integer(0) }.first.map(Int.init) ?? 0
        }
    }

    public func expand(
        _ job: FanoutJob, from: FanoutCursor, to: FanoutCursor, finished: Bool, devices: [DeviceRecord], watchers: Int?, now: Date,
        claim: DirectClaim?
    ) async throws -> EnqueueResult? {
        let page = FanoutPage(job: job, from: from, to: to, finished: finished, devices: devices, watchers: watchers, now: now, claim: claim)
        guard case .expanded(let result) = try await writes.submit(.expand(page)) else { preconditionFailure("an expansion commits as one") }
        return result
    }

    /// One caller's `expand`.
    struct FanoutPage: Sendable {
        var job: FanoutJob
        var from: FanoutCursor
        var to: FanoutCursor
        var finished: Bool
        var devices: [DeviceRecord]
        var watchers: Int?
        var now: Date
        var claim: DirectClaim?
    }

    static func expand(_ page: FanoutPage, _ db: Database, _ statements: WriterStatements) throws -> EnqueueResult? {
        let job = page.job
        // The cursor is where the expander read it, or another writer took this page.
        guard let at = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT key_index, cursor_row, expanded FROM fanouts WHERE event_id = ? AND finished_at IS NULL"),
            arguments: [job.eventID]),
            at[0] as Int == page.from.keyIndex, at[1] as Int64 == page.from.row
        else { return nil }
        let ms = page.now.milliseconds
        var writer = try DeliveryWriter(db, now: ms, claim: page.claim, statements: statements)
        var event = NewEvent(
            id: job.eventID, app: job.app, template: job.template, push: job.push, expiresAt: job.expiresAt, devices: page.devices)
        event.requestID = job.requestID
        event.coalescing = job.coalescing
        let added = try writer.add(event, acceptedAt: job.createdAt.milliseconds, fanout: true, db)
        let expanded = (at[2] as Int64) + Int64(added)
        try db.cachedStatement(
            sql: """
                UPDATE fanouts SET key_index = ?, cursor_row = ?, expanded = ?, devices = CASE WHEN ? THEN ? ELSE COALESCE(?, devices) END,
                  finished_at = ? WHERE event_id = ?
                """
        ).execute(arguments: [
            page.to.keyIndex, page.to.row, expanded, page.finished, expanded, page.watchers.map { Int64($0) }, page.finished ? ms : nil,
            job.eventID,
        ])
        try writer.finish(db)
        return EnqueueResult(created: [job.eventID: added], claimed: writer.claimed, pending: writer.pending)
    }

    public func kasiaRoutingFacts(rowIDs: [Int64], key: String) async throws -> [Int64: KasiaRoutingFacts] {
        guard !rowIDs.isEmpty else { return [:] }
        let list = String(decoding: JSONValue.array(rowIDs.map { .int($0) }).encoded, as: UTF8.self)
        return try readers.read { db in
            let keys = try db.rows(
                """
                SELECT device_row, role, key = ?1 FROM watch_keys
                WHERE device_row IN (SELECT value FROM json_each(?2)) AND (role = 'own' OR key = ?1)
                """, [key, list]) { (row: $0.integer(0), role: $0.text(1), isKey: $0.integer(2) != 0) }
            let routes = try db.rows(
                "SELECT device_row, alias FROM contextual_routes WHERE peer = ?1 AND device_row IN (SELECT value FROM json_each(?2))",
                [key, list]) { (row: $0.integer(0), alias: $0.text(1)) }
            return KasiaRoutingFacts.collect(rowIDs: rowIDs, keys: keys, routes: routes)
        }
    }

    public func unclaimedDeliveries(app: String, limit: Int, now: Date) async throws -> Int {
        try readers.read { db in
            try db.rows(
                """
                SELECT COUNT(*) FROM (SELECT 1 FROM deliveries WHERE app_id = ? AND platform IN \(lanePlatforms)
                  AND state = 'pending' AND next_attempt_at <= ? LIMIT \(max(0, limit)))
                """, [app, String(now.milliseconds)]
            ) { $0.integer(0) }.first.map(Int.init) ?? 0
        }
    }

    public func pendingFanoutDevices() async throws -> Int {
        try readers.read { db in
            try db.rows(
                "SELECT COALESCE(SUM(MAX(COALESCE(devices, 0) - expanded, 0)), 0) FROM fanouts WHERE finished_at IS NULL", []
            ) { $0.integer(0) }.first.map(Int.init) ?? 0
        }
    }
}

extension FanoutCandidates {
    /// A page from two sources read in device order, `limit` each: it covers what both covered,
    /// up to the lower of their last rows where a source was full (past that, the full one may
    /// have more). Device rows in order, each once.
    static func page(_ first: [Int64], _ second: [Int64], after row: Int64, limit: Int) -> (rows: [Int64], through: Int64, exhausted: Bool) {
        let firstBound = first.count >= limit ? first.last : nil
        let secondBound = second.count >= limit ? second.last : nil
        let bound = [firstBound, secondBound].compactMap { $0 }.min()
        let rows = Set(first + second).filter { bound == nil || $0 <= bound! }.sorted()
        return (rows, bound ?? max(row, rows.last ?? row), bound == nil)
    }
}
