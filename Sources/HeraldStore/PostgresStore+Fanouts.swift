public import Foundation
public import HeraldCore
import HeraldPushCore
import NIOCore
import PostgresNIO

/// PostgresStore: fan-out jobs. Instances share a job's pages: each page's commit locks the job
/// row with `SKIP LOCKED` and checks its cursor, so two instances never expand the same page, and
/// one waiting on another's page moves on instead of queueing behind it.
extension PostgresStore {
    public func openFanouts(limit: Int) async throws -> [FanoutJob] {
        try await leased { [self] client in
            var jobs: [FanoutJob] = []
            for try await row in try await client.query(
                """
                SELECT f.event_id, f.app_id, e.template, e.push_type, e.priority, e.collapse_id, e.payload, e.fcm_data, e.expires_at,
                       e.created_at, e.request_id, f.keys, f.excluded, f.kasia, f.key_index, f.cursor_row, f.devices, f.expanded,
                       e.coalesce_key, e.coalesce_ms
                FROM fanouts f JOIN events e ON e.id = f.event_id
                WHERE f.finished_at IS NULL ORDER BY f.created_at, f.event_id LIMIT \(Int64(limit))
                """, logger: logger)
            {
                let (eventID, app, template, pushType, priority, collapseID, payload, fcmData, expiresAt) =
                    try row.decode((String, String, String, String, Int64, String?, ByteBuffer, String?, Int64).self)
                let cells = Array(row)
                let createdAt = try cells[9].decode(Int64.self)
                let requestID = try cells[10].decode(String?.self)
                let (keys, excluded, kasia) = (try cells[11].decode(String.self), try cells[12].decode(String.self), try cells[13].decode(String?.self))
                let cursor = FanoutCursor(keyIndex: Int(try cells[14].decode(Int64.self)), row: try cells[15].decode(Int64.self))
                let (devices, expanded) = (try cells[16].decode(Int64?.self), try cells[17].decode(Int64.self))
                let coalescing = Coalescing(storedKey: try cells[18].decode(String?.self), window: try cells[19].decode(Int64?.self))
                guard let route = FanoutRoute(keys: keys, excluded: excluded, kasia: kasia) else { continue }
                jobs.append(FanoutJob(
                    eventID: eventID, app: app, template: template,
                    push: RenderedPush(
                        storedPushType: pushType, storedPriority: Int(priority), collapseID: collapseID, payload: Array(payload.readableBytesView),
                        fcmData: RenderedPush.fcmData(json: fcmData)),
                    expiresAt: Date(milliseconds: expiresAt), createdAt: Date(milliseconds: createdAt), requestID: requestID, route: route,
                    cursor: cursor, devices: devices.map(Int.init), expanded: Int(expanded), coalescing: coalescing))
            }
            return jobs
        }
    }

    public func fanoutCandidates(app: String, key: String, after row: Int64, limit: Int) async throws -> FanoutCandidates {
        let limit = Int64(max(1, limit))
        return try await leased { [self] client in
            func rows(_ query: PostgresQuery) async throws -> [Int64] {
                var found: [Int64] = []
                for try await row in try await client.query(query, logger: logger).decode(Int64.self) { found.append(row) }
                return found
            }
            let watching = try await rows(
                "SELECT DISTINCT device_row FROM watch_keys WHERE key = \(key) AND device_row > \(row) ORDER BY device_row LIMIT \(limit)")
            let routed = try await rows(
                "SELECT DISTINCT device_row FROM contextual_routes WHERE peer = \(key) AND device_row > \(row) ORDER BY device_row LIMIT \(limit)")
            let page = FanoutCandidates.page(watching, routed, after: row, limit: Int(limit))
            guard !page.rows.isEmpty else { return FanoutCandidates(devices: [], through: page.through, exhausted: page.exhausted) }
            let devices = try await Self.devices(client.query(
                """
                SELECT \(unescaped: Self.deviceColumns) FROM devices
                WHERE id = ANY(\(page.rows)) AND app_id = \(app) AND disabled_reason IS NULL ORDER BY id
                """, logger: logger))
            return FanoutCandidates(devices: devices, through: page.through, exhausted: page.exhausted)
        }
    }

    public func watcherCount(key: String, limit: Int) async throws -> Int {
        let bound = Int64(max(0, limit))
        return try await leased { [self] client in
            for try await n in try await client.query(
                """
                SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM watch_keys WHERE key = \(key) LIMIT \(bound)) w)
                     + (SELECT COUNT(*) FROM (SELECT 1 FROM contextual_routes WHERE peer = \(key) LIMIT \(bound)) r)
                """, logger: logger
            ).decode(Int64.self) {
                return Int(n)
            }
            return 0
        }
    }

    /// Leases a page's deliveries to this instance's waiting lanes (`claim`), as SQLite does at
    /// every enqueue; the rest wait for any instance's lanes.
    public func expand(
        _ job: FanoutJob, from: FanoutCursor, to: FanoutCursor, finished: Bool, devices: [DeviceRecord], watchers: Int?, now: Date,
        claim: DirectClaim?
    ) async throws -> EnqueueResult? {
        let ms = now.milliseconds
        return try await leased { [self] client in
            try await client.withTransaction(logger: logger) { db in
                var expandedBefore: Int64?
                for try await (keyIndex, cursor, expanded) in try await db.query(
                    """
                    SELECT key_index, cursor_row, expanded FROM fanouts WHERE event_id = \(job.eventID) AND finished_at IS NULL
                    FOR UPDATE SKIP LOCKED
                    """, logger: logger
                ).decode((Int64, Int64, Int64).self) where keyIndex == Int64(from.keyIndex) && cursor == from.row {
                    expandedBefore = expanded
                }
                guard let expandedBefore else { return nil }
                // Up to each waiting lane's count leased to it at once (this instance sends them;
                // no other claims a leased row), the rest pending for any instance's lanes.
                var budget = claim?.lanes ?? [:]
                var byRow: [Int64: DeviceRecord] = [:], rows: [Int64] = [], leases: [Bool] = []
                for device in devices.sorted(by: { $0.rowID < $1.rowID }) where byRow.updateValue(device, forKey: device.rowID) == nil {
                    let lane = LaneKey(app: job.app, platform: device.platform)
                    let left = budget[lane] ?? 0
                    if left > 0 { budget[lane] = left - 1 }
                    rows.append(device.rowID)
                    leases.append(left > 0)
                }
                let sequence = DeliveryIDSequence()
                let leaseUntil = ms + Int64((claim?.lease ?? .zero).seconds * 1000)
                var claimed: [ClaimedDelivery] = []
                var pending = Set<LaneKey>()
                var added: Int64 = 0
                var written: [(id: Int64, row: Int64, apnsID: String, leased: Bool)] = []
                if let coalescing = job.coalescing {
                    written = try await Self.insertCoalescing(
                        db, eventID: job.eventID, app: job.app, coalescing: coalescing, rows: rows, apnsIDs: rows.map(sequence.id(for:)),
                        lease: leases, expiresAt: job.expiresAt.milliseconds, now: ms, leaseUntil: leaseUntil, logger: logger)
                } else if !rows.isEmpty {
                    // A device removed since its page was read is not joined.
                    for try await (id, row, apnsID, leased) in try await db.query(
                        """
                        INSERT INTO deliveries (event_id, device_row, app_id, state, attempts, next_attempt_at, lease_until, apns_id, expires_at, created_at, updated_at, platform)
                        SELECT \(job.eventID), r, \(job.app), CASE WHEN l THEN 'sending' ELSE 'pending' END, CASE WHEN l THEN 1 ELSE 0 END, \(ms),
                          CASE WHEN l THEN \(leaseUntil) END, n, \(job.expiresAt.milliseconds), \(ms), \(ms), d.platform
                        FROM unnest(\(rows)::BIGINT[], \(rows.map(sequence.id(for:)))::TEXT[], \(leases)::BOOLEAN[]) AS t(r, n, l)
                          JOIN devices d ON d.id = t.r
                        RETURNING id, device_row, apns_id, state = 'sending'
                        """, logger: logger
                    ).decode((Int64, Int64, String, Bool).self) {
                        written.append((id, row, apnsID, leased))
                    }
                }
                for delivery in written {
                    guard let device = byRow[delivery.row] else { continue }
                    added += 1
                    guard delivery.leased else {
                        pending.insert(LaneKey(app: job.app, platform: device.platform))
                        continue
                    }
                    var leased = ClaimedDelivery(
                        id: delivery.id, eventID: job.eventID, device: device, push: job.push, apnsID: UUID(uuidString: delivery.apnsID) ?? UUID(),
                        attempt: 1, expiresAt: job.expiresAt, acceptedAt: job.createdAt, requestID: job.requestID, template: job.template)
                    leased.fanout = true
                    claimed.append(leased)
                }
                let total = expandedBefore + added
                let counted: Int64? = finished ? total : watchers.map(Int64.init)
                try await db.query(
                    """
                    UPDATE fanouts SET key_index = \(Int64(to.keyIndex)), cursor_row = \(to.row), expanded = \(total),
                      devices = COALESCE(\(counted), devices), finished_at = \(finished ? ms : nil)
                    WHERE event_id = \(job.eventID)
                    """, logger: logger)
                return EnqueueResult(created: [job.eventID: Int(added)], claimed: claimed, pending: pending)
            }
        }
    }

    public func kasiaRoutingFacts(rowIDs: [Int64], key: String) async throws -> [Int64: KasiaRoutingFacts] {
        guard !rowIDs.isEmpty else { return [:] }
        return try await leased { [self] client in
            var keys: [(row: Int64, role: String, isKey: Bool)] = []
            for try await (row, role, isKey) in try await client.query(
                """
                SELECT device_row, role, key = \(key) FROM watch_keys
                WHERE device_row = ANY(\(rowIDs)) AND (role = 'own' OR key = \(key))
                """, logger: logger
            ).decode((Int64, String, Bool).self) {
                keys.append((row, role, isKey))
            }
            var routes: [(row: Int64, alias: String)] = []
            for try await (row, alias) in try await client.query(
                "SELECT device_row, alias FROM contextual_routes WHERE peer = \(key) AND device_row = ANY(\(rowIDs))", logger: logger
            ).decode((Int64, String).self) {
                routes.append((row, alias))
            }
            return KasiaRoutingFacts.collect(rowIDs: rowIDs, keys: keys, routes: routes)
        }
    }

    public func unclaimedDeliveries(app: String, limit: Int, now: Date) async throws -> Int {
        try await leased { [self] client in
            for try await n in try await client.query(
                """
                SELECT COUNT(*)::BIGINT FROM (SELECT 1 FROM deliveries WHERE app_id = \(app) AND state = 'pending'
                  AND next_attempt_at <= \(now.milliseconds) LIMIT \(Int64(max(0, limit)))) due
                """, logger: logger
            ).decode(Int64.self) {
                return Int(n)
            }
            return 0
        }
    }

    public func pendingFanoutDevices() async throws -> Int {
        try await leased { [self] client in
            for try await n in try await client.query(
                "SELECT COALESCE(SUM(GREATEST(COALESCE(devices, 0) - expanded, 0)), 0)::BIGINT FROM fanouts WHERE finished_at IS NULL",
                logger: logger
            ).decode(Int64.self) {
                return Int(n)
            }
            return 0
        }
    }
}
