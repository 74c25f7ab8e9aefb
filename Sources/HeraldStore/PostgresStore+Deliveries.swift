public import Foundation
import HeraldCore
public import HeraldPushCore
import NIOCore
import PostgresNIO

/// PostgresStore: outbox.
extension PostgresStore {
    public func claimDue(app: String, platform: Platform, limit: Int, now: Date, lease: Duration) async throws -> [ClaimedDelivery] {
        return try await leased(waiting: Self.laneConnectionWait, answering: laneAnswerDeadline) { [self] client in
            let ms = now.milliseconds
            let leaseUntil = ms + Int64(lease.seconds * 1000)
            return try await client.withTransaction(logger: logger) { db in
                // Rows another instance is claiming are skipped, not waited for.
                let claimed = try await db.query(
                    """
                    WITH due AS (
                      SELECT id FROM deliveries
                      WHERE app_id = \(app) AND platform = \(platform.rawValue) AND ((state = 'pending' AND next_attempt_at <= \(ms)) OR (state = 'sending' AND lease_until <= \(ms)))
                      ORDER BY next_attempt_at, id
                      LIMIT \(Int64(limit))
                      FOR UPDATE SKIP LOCKED)
                    UPDATE deliveries dl SET state = 'sending', lease_until = \(leaseUntil), attempts = attempts + 1, updated_at = \(ms)
                    FROM due WHERE dl.id = due.id
                    RETURNING dl.id
                    """, logger: logger)
                var ids: [Int64] = []
                for try await id in claimed.decode(Int64.self) { ids.append(id) }
                guard !ids.isEmpty else { return [] }
                // An event's push comes once per claim, with its first delivery in the claim's order:
                // a fan-out page's thousand deliveries share it (its bytes cross the connection once).
                let rows = try await db.query(
                    """
                    SELECT dl.id, dl.event_id, dl.apns_id, dl.attempts, dl.expires_at, e.push_type, e.priority, e.collapse_id,
                           CASE WHEN dl.first THEN e.payload END, CASE WHEN dl.first THEN e.fcm_data END,
                           dl.created_at, e.request_id, e.template, e.fanout,
                           \(unescaped: Self.deviceColumns.split(separator: ",").map { "d." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", "))
                    FROM (SELECT *, row_number() OVER (PARTITION BY event_id ORDER BY next_attempt_at, id) = 1 AS first FROM deliveries WHERE id = ANY(\(ids))) dl
                      JOIN events e ON e.id = dl.event_id JOIN devices d ON d.id = dl.device_row
                    ORDER BY dl.next_attempt_at, dl.id
                    """, logger: logger)
                var out: [ClaimedDelivery] = []
                var pushes: [String: RenderedPush] = [:]
                for try await row in rows {
                    let (id, eventID, apnsID, attempts, expiresAt, pushType, priority, collapseID, payload, fcmData, createdAt, requestID, template, fanout) =
                        try row.decode(
                            (Int64, String, String, Int64, Int64, String, Int64, String?, ByteBuffer?, String?, Int64, String?, String, Bool).self)
                    if let payload {
                        pushes[eventID] = RenderedPush(
                            storedPushType: pushType, storedPriority: Int(priority),
                            collapseID: collapseID, payload: Array(payload.readableBytesView), fcmData: RenderedPush.fcmData(json: fcmData))
                    }
                    // Never missing: the first row of each event carries its push.
                    guard let push = pushes[eventID] else { continue }
                    var delivery = ClaimedDelivery(
                        id: id, eventID: eventID, device: try Self.device(row, from: 14), push: push,
                        apnsID: UUID(uuidString: apnsID) ?? UUID(), attempt: Int(attempts), expiresAt: Date(milliseconds: expiresAt),
                        acceptedAt: Date(milliseconds: createdAt), requestID: requestID, template: template)
                    delivery.fanout = fanout
                    out.append(delivery)
                }
                return out
            }
        }
    }

    public func complete(_ outcomes: [DeliveryOutcome], now: Date) async throws {
        return try await leased(waiting: Self.laneConnectionWait, answering: laneAnswerDeadline) { [self] client in
            guard !outcomes.isEmpty else { return }
            let ms = now.milliseconds
            try await client.withTransaction(logger: logger) { db in
                func set(_ id: Int64, _ state: DeliveryState, _ reason: String?) async throws {
                    try await db.query(
                        "UPDATE deliveries SET state = \(state.rawValue), last_reason = \(reason), lease_until = NULL, updated_at = \(ms) WHERE id = \(id)",
                        logger: logger)
                }
                // The sent ones (nearly all) in one statement.
                let sent = outcomes.compactMap { outcome -> Int64? in if case .sent(let id, nil) = outcome { id } else { nil } }
                if !sent.isEmpty {
                    try await db.query(
                        "UPDATE deliveries SET state = 'sent', last_reason = NULL, lease_until = NULL, updated_at = \(ms) WHERE id = ANY(\(sent))",
                        logger: logger)
                }
                // A job's, sent: nothing of it to remember but the job's count (and the counter's:
                // the delete trigger takes the row's state off it).
                let sentOfJobs = outcomes.compactMap { outcome -> Int64? in if case .sent(let id, _?) = outcome { id } else { nil } }
                if !sentOfJobs.isEmpty {
                    try await db.query(
                        """
                        WITH gone AS (DELETE FROM deliveries WHERE id = ANY(\(sentOfJobs)) RETURNING event_id),
                          jobs AS (
                            UPDATE fanouts f SET sent = f.sent + g.n FROM (SELECT event_id, COUNT(*) AS n FROM gone GROUP BY event_id) g
                            WHERE f.event_id = g.event_id RETURNING g.n)
                        INSERT INTO delivery_count_deltas (state, reason, n) SELECT 'sent', '', SUM(n) FROM jobs HAVING COUNT(*) > 0
                        """, logger: logger)
                }
                for outcome in outcomes {
                    switch outcome {
                    case .sent:
                        continue
                    case .retry(let id, let at, let reason):
                        try await db.query(
                            """
                            UPDATE deliveries SET state = 'pending', next_attempt_at = \(at.milliseconds), last_reason = \(reason),
                              lease_until = NULL, updated_at = \(ms) WHERE id = \(id)
                            """, logger: logger)
                    case .retryDevice(let id, let deviceRowID, let at, let reason):
                        try await db.query(
                            """
                            UPDATE deliveries SET state = 'pending', next_attempt_at = \(at.milliseconds), last_reason = \(reason),
                              lease_until = NULL, updated_at = \(ms) WHERE id = \(id)
                            """, logger: logger)
                        try await db.query(
                            """
                            UPDATE deliveries SET next_attempt_at = \(at.milliseconds), updated_at = \(ms)
                            WHERE device_row = \(deviceRowID) AND state = 'pending' AND next_attempt_at < \(at.milliseconds)
                            """, logger: logger)
                    case .failed(let id, let reason):
                        try await set(id, .failed, reason)
                    case .expired(let id):
                        try await set(id, .expired, "expired")
                    case .tokenDead(let id, let deviceRowID, let since, let reason):
                        try await set(id, .failed, reason)
                        // Remembered past the device's deletion, for requests that name their device themselves.
                        let deadAt = (since ?? now).milliseconds
                        try await db.query(
                            """
                            INSERT INTO dead_tokens (app_id, token, reason, dead_at) SELECT app_id, token, \(reason), \(deadAt) FROM devices
                            WHERE id = \(deviceRowID) AND (\(since == nil) OR updated_at <= \(deadAt))
                            ON CONFLICT (app_id, token) DO UPDATE SET reason = excluded.reason, dead_at = excluded.dead_at
                            """, logger: logger)
                        if let since {
                            // Compare-and-delete: a registration after APNs's timestamp keeps the device.
                            try await db.query(
                                "DELETE FROM devices WHERE id = \(deviceRowID) AND updated_at <= \(since.milliseconds)", logger: logger)
                        } else {
                            try await db.query("UPDATE devices SET disabled_reason = \(reason) WHERE id = \(deviceRowID)", logger: logger)
                            try await db.query(
                                """
                                UPDATE deliveries SET state = 'dropped', last_reason = \(reason), lease_until = NULL, updated_at = \(ms)
                                WHERE device_row = \(deviceRowID) AND state IN ('pending', 'sending') AND id <> \(id)
                                """, logger: logger)
                        }
                    }
                }
            }
        }
    }

    public func expire(now: Date) async throws -> Int {
        return try await leased(waiting: Self.laneConnectionWait, answering: laneAnswerDeadline) { [self] client in
            try await Self.count(client.query(
                """
                UPDATE deliveries SET state = 'expired', last_reason = 'expired', lease_until = NULL, updated_at = \(now.milliseconds)
                WHERE state = 'pending' AND expires_at <= \(now.milliseconds) RETURNING id
                """, logger: logger))
        }
    }
}
