public import Foundation
import HeraldCore
import HeraldPushCore
import NIOCore
import PostgresNIO

/// PostgresStore: events.
extension PostgresStore {
    /// Claims nothing at enqueue (each instance's lanes claim with `SKIP LOCKED`): every lane of
    /// the events' apps is told to look.
    public func enqueue(_ events: [NewEvent], checkpoint: ChainCheckpoint?, now: Date, claim: DirectClaim?) async throws -> EnqueueResult {
        .allPending(created: try await insert(events, checkpoint: checkpoint, now: now), events: events)
    }

    func insert(_ events: [NewEvent], checkpoint: ChainCheckpoint?, now: Date) async throws -> [String: Int] {
        return try await leased { [self] client in
            let ms = now.milliseconds
            // Three statements per call, whatever the number of events: arrays through unnest.
            return try await client.withTransaction(logger: logger) { db in
                var created: [String: Int] = [:]
                var firstOfKey = Set<String>()
                // Within one call the first event of a dedupe key wins, as it would one by one.
                let events = events.filter { event in event.dedupeKey.map { firstOfKey.insert($0).inserted } ?? true }
                if !events.isEmpty {
                    let apps = Array(Set(events.map(\.app))).sorted()
                    try await db.query(
                        "INSERT INTO apps (id, created_at) SELECT a, \(ms) FROM unnest(\(apps)::TEXT[]) AS t(a) ON CONFLICT (id) DO NOTHING",
                        logger: logger)
                    let ids = events.map(\.id)
                    let rows = try await db.query(
                        """
                        INSERT INTO events (id, app_id, template, push_type, priority, collapse_id, payload, created_at, expires_at, dedupe_key, fcm_data, request_id,
                          coalesce_key, coalesce_ms, fanout)
                        SELECT i, a, t, p, r, NULLIF(c, ''), b, \(ms), e, NULLIF(d, ''), NULLIF(f, ''), NULLIF(q, ''), NULLIF(k, ''), NULLIF(w, 0), j
                        FROM unnest(\(ids)::TEXT[], \(events.map(\.app))::TEXT[], \(events.map(\.template))::TEXT[],
                                    \(events.map(\.push.pushType.rawValue))::TEXT[], \(events.map { Int64($0.push.priority.rawValue) })::BIGINT[],
                                    \(events.map { $0.push.collapseID ?? "" })::TEXT[], \(events.map { ByteBuffer(bytes: $0.push.payload) })::BYTEA[],
                                    \(events.map { $0.expiresAt.milliseconds })::BIGINT[], \(events.map { $0.dedupeKey ?? "" })::TEXT[],
                                    \(events.map { $0.push.fcmDataJSON ?? "" })::TEXT[], \(events.map { $0.requestID ?? "" })::TEXT[],
                                    \(events.map { $0.coalescing?.key ?? "" })::TEXT[], \(events.map { $0.coalescing?.window ?? 0 })::BIGINT[],
                                    \(events.map { $0.fanout != nil })::BOOLEAN[])
                             AS u(i, a, t, p, r, c, b, e, d, f, q, k, w, j)
                        ON CONFLICT (dedupe_key) DO NOTHING
                        RETURNING id
                        """, logger: logger)
                    var inserted = Set<String>()
                    for try await id in rows.decode(String.self) { inserted.insert(id) }
                    var eventIDs: [String] = [], deviceRows: [Int64] = [], apnsIDs: [String] = [], appIDs: [String] = [], expires: [Int64] = []
                    for event in events where inserted.contains(event.id) {
                        if let route = event.fanout {
                            let stored = route.storedColumns
                            try await db.query(
                                """
                                INSERT INTO fanouts (event_id, app_id, keys, excluded, kasia, key_index, cursor_row, expanded, created_at)
                                VALUES (\(event.id), \(event.app), \(stored.keys), \(stored.excluded), \(stored.kasia), 0, 0, 0, \(ms))
                                """, logger: logger)
                            created[event.id] = 0
                            continue
                        }
                        let rows = Array(Set(event.deviceRowIDs)).sorted()
                        let sequence = DeliveryIDSequence()
                        if let coalescing = event.coalescing {
                            created[event.id] = try await Self.insertCoalescing(
                                db, eventID: event.id, app: event.app, coalescing: coalescing, rows: rows, apnsIDs: rows.map(sequence.id(for:)),
                                lease: rows.map { _ in false }, expiresAt: event.expiresAt.milliseconds, now: ms, leaseUntil: ms, logger: logger
                            ).count
                            continue
                        }
                        for row in rows {
                            eventIDs.append(event.id)
                            deviceRows.append(row)
                            apnsIDs.append(sequence.id(for: row))
                            appIDs.append(event.app)
                            expires.append(event.expiresAt.milliseconds)
                        }
                        created[event.id] = 0
                    }
                    if !eventIDs.isEmpty {
                        // A device removed since routing (its token died, it unregistered) is not
                        // joined: the event goes to the others.
                        let added = try await db.query(
                            """
                            INSERT INTO deliveries (event_id, device_row, app_id, state, attempts, next_attempt_at, apns_id, expires_at, created_at, updated_at, platform)
                            SELECT v, r, a, 'pending', 0, \(ms), n, e, \(ms), \(ms), d.platform
                            FROM unnest(\(eventIDs)::TEXT[], \(deviceRows)::BIGINT[], \(appIDs)::TEXT[], \(apnsIDs)::TEXT[], \(expires)::BIGINT[])
                                 AS t(v, r, a, n, e) JOIN devices d ON d.id = t.r
                            RETURNING event_id
                            """, logger: logger)
                        for try await id in added.decode(String.self) { created[id, default: 0] += 1 }
                    }
                }
                if let checkpoint {
                    try await db.query(
                        """
                        INSERT INTO chain_checkpoints (source, block_hash, daa_score, updated_at)
                        VALUES (\(checkpoint.source), \(checkpoint.blockHash), \(Int64(bitPattern: checkpoint.daaScore)), \(ms))
                        ON CONFLICT (source) DO UPDATE SET block_hash = excluded.block_hash,
                          daa_score = excluded.daa_score, updated_at = excluded.updated_at
                        """, logger: logger)
                }
                return created
            }
        }
    }

    public func checkpoint(source: String) async throws -> ChainCheckpoint? {
        let rows = try await client.query(
            "SELECT source, block_hash, daa_score FROM chain_checkpoints WHERE source = \(source)", logger: logger)
        for try await (source, hash, score) in rows.decode((String, String, Int64).self) {
            return ChainCheckpoint(source: source, blockHash: hash, daaScore: UInt64(bitPattern: score))
        }
        return nil
    }

    public func anchors(source: String) async throws -> [ChainAnchor] {
        let rows = try await client.query(
            "SELECT block_hash, daa_score, block_time FROM chain_anchors WHERE source = \(source) ORDER BY block_time DESC", logger: logger)
        var anchors: [ChainAnchor] = []
        for try await (hash, score, time) in rows.decode((String, Int64, Int64).self) {
            anchors.append(ChainAnchor(source: source, blockHash: hash, daaScore: UInt64(bitPattern: score), time: Date(milliseconds: time)))
        }
        return anchors
    }

    public func addAnchor(_ anchor: ChainAnchor, keepingAfter: Date) async throws {
        try await client.withTransaction(logger: logger) { db in
            try await db.query(
                """
                INSERT INTO chain_anchors (source, block_hash, daa_score, block_time)
                VALUES (\(anchor.source), \(anchor.blockHash), \(Int64(bitPattern: anchor.daaScore)), \(anchor.time.milliseconds))
                ON CONFLICT DO NOTHING
                """, logger: logger)
            try await db.query(
                "DELETE FROM chain_anchors WHERE source = \(anchor.source) AND block_time < \(keepingAfter.milliseconds)", logger: logger)
        }
    }
}
