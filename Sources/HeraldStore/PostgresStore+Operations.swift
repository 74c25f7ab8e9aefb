public import Foundation
import PostgresNIO

/// PostgresStore: operations.
extension PostgresStore {
    public func deviceCount(app: String) async throws -> Int {
        return try await leased { [self] client in
            for try await (count) in try await client.query("SELECT COUNT(*) FROM devices WHERE app_id = \(app)", logger: logger).decode(Int64.self) {
                return Int(count)
            }
            return 0
        }
    }

    public func deleteStaleDevices(lastSeenBefore: Date) async throws -> Int {
        try await Self.count(client.query(
            "DELETE FROM devices WHERE last_seen < \(lastSeenBefore.milliseconds) RETURNING id", logger: logger))
    }

    /// The counters (totals plus the deltas not folded yet), and the oldest pending delivery off
    /// the lane index: no query here counts rows of the tables.
    public func stats() async throws -> StoreStats {
        return try await leased { [self] client in
            var counts = StoreStats.Counts()
            counts.devices = try await counterRows(Self.deviceCounters)
            counts.deliveries = try await counterRows(Self.deliveryCounters)
            return StoreStats(counts, queues: try await queues())
        }
    }

    /// A kind of counter: its totals, the deltas not folded into them yet, and its two key columns.
    struct Counters {
        var totals: String
        var deltas: String
        var keys: String
    }
    static let deviceCounters = Counters(totals: "device_counts", deltas: "device_count_deltas", keys: "app_id, platform")
    static let deliveryCounters = Counters(totals: "delivery_counts", deltas: "delivery_count_deltas", keys: "state, reason")

    /// Each key's total plus its deltas.
    func counterRows(_ c: Counters) async throws -> [(String, String, Int)] {
        var rows: [(String, String, Int)] = []
        let sql = "SELECT \(c.keys), SUM(n)::BIGINT FROM (SELECT \(c.keys), n FROM \(c.totals) UNION ALL SELECT \(c.keys), n FROM \(c.deltas)) c GROUP BY 1, 2"
        for try await (a, b, n) in try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode((String, String, Int64).self) {
            rows.append((a, b, Int(n)))
        }
        return rows
    }

    /// Folds the counters' deltas into their totals, in one transaction: a delta is moved once
    /// (a concurrent fold waits on the rows this one deletes, then finds them gone). Totals at
    /// zero go (failure reasons are a push service's words, and a Web Push service is anyone's).
    public func compactCounters() async throws {
        try await client.withTransaction(logger: logger) { db in
            for c in [Self.deliveryCounters, Self.deviceCounters] {
                try await db.query(
                    PostgresQuery(unsafeSQL: """
                        WITH moved AS (DELETE FROM \(c.deltas) RETURNING \(c.keys), n)
                        INSERT INTO \(c.totals) (\(c.keys), n) SELECT \(c.keys), SUM(n) FROM moved GROUP BY 1, 2 ORDER BY 1, 2
                        ON CONFLICT (\(c.keys)) DO UPDATE SET n = \(c.totals).n + EXCLUDED.n
                        """), logger: logger)
                try await db.query(PostgresQuery(unsafeSQL: "DELETE FROM \(c.totals) WHERE n = 0"), logger: logger)
            }
        }
    }

    public func pruneDeadTokens(deadBefore: Date) async throws -> Int {
        try await Self.count(client.query(
            "DELETE FROM dead_tokens WHERE dead_at < \(deadBefore.milliseconds) RETURNING dead_at", logger: logger))
    }

    public func pruneFinished(createdBefore before: Date, after cursor: PruneCursor?, limit: Int) async throws -> PruneBatch {
        let start = cursor ?? PruneCursor(createdAt: .min, eventID: "")
        return try await client.withTransaction(logger: logger) { db in
            // Once a pass: coalescing slots last used before the cutoff no longer hold anything back.
            if cursor == nil { try await db.query("DELETE FROM coalescing_slots WHERE next_slot < \(before.milliseconds)", logger: logger) }
            var candidates: [PruneCursor] = []
            for try await (createdAt, id) in try await db.query(
                """
                SELECT created_at, id FROM events WHERE created_at < \(before.milliseconds) AND (created_at, id) > (\(start.createdAt), \(start.eventID))
                ORDER BY created_at, id LIMIT \(Int64(pruneCandidates))
                """, logger: logger
            ).decode((Int64, String).self) {
                candidates.append(PruneCursor(createdAt: createdAt, eventID: id))
            }
            func exists(_ query: PostgresQuery) async throws -> Bool {
                for try await _ in try await db.query(query, logger: logger).decode(Int32.self) { return true }
                return false
            }
            var batch = PruneBatch(events: 0, deliveries: 0, next: cursor)
            var budget = max(1, limit)
            for here in candidates {
                let id = here.eventID
                // Unfinished: a delivery not done, or a fan-out job not fully expanded.
                let sending = try await exists("SELECT 1 FROM deliveries WHERE event_id = \(id) AND state IN ('pending', 'sending') LIMIT 1")
                let expanding = try await exists("SELECT 1 FROM fanouts WHERE event_id = \(id) AND finished_at IS NULL")
                if sending || expanding {
                    batch.next = here
                    continue
                }
                var deleted = 0
                for try await _ in try await db.query(
                    "DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE event_id = \(id) LIMIT \(Int64(budget))) RETURNING id",
                    logger: logger
                ).decode(Int64.self) { deleted += 1 }
                budget -= deleted
                batch.deliveries += deleted
                // Out of budget with deliveries left: the next batch starts at this event again.
                if budget <= 0, try await exists("SELECT 1 FROM deliveries WHERE event_id = \(id) LIMIT 1") {
                    // (From the start when this was the pass's first event: a nil cursor would end the pass.)
                    batch.next = batch.next ?? start
                    return batch
                }
                // The event goes with its job; a job's sent deliveries left no rows, so their counter
                // goes with the job, in the same statement.
                try await db.query(
                    """
                    WITH job AS (SELECT sent FROM fanouts WHERE event_id = \(id) AND sent > 0), gone AS (DELETE FROM events WHERE id = \(id))
                    INSERT INTO delivery_count_deltas (state, reason, n) SELECT 'sent', '', -sent FROM job
                    """, logger: logger)
                batch.events += 1
                batch.next = here
                if budget <= 0 { return batch }
            }
            if candidates.count < pruneCandidates { batch.next = nil }
            return batch
        }
    }

    public func event(id: String) async throws -> EventStatus? {
        return try await leased { [self] client in
            var status: EventStatus?
            for try await (app, template, created, expires) in try await client.query(
                "SELECT app_id, template, created_at, expires_at FROM events WHERE id = \(id)", logger: logger
            ).decode((String, String, Int64, Int64).self) {
                status = EventStatus(id: id, app: app, template: template, createdAt: Date(milliseconds: created), expiresAt: Date(milliseconds: expires))
            }
            guard var status else { return nil }
            for try await (state, reason, n) in try await client.query(
                "SELECT state, last_reason, COUNT(*)::BIGINT FROM deliveries WHERE event_id = \(id) GROUP BY state, last_reason", logger: logger
            ).decode((String, String?, Int64).self) {
                status.add(state: state, reason: reason, count: Int(n))
            }
            for try await (devices, expanded, finished, sent) in try await client.query(
                "SELECT devices, expanded, finished_at, sent FROM fanouts WHERE event_id = \(id)", logger: logger
            ).decode((Int64?, Int64, Int64?, Int64).self) {
                status.fanout = FanoutProgress(devices: devices.map(Int.init), expanded: Int(expanded), finished: finished != nil)
                if sent > 0 { status.add(state: DeliveryState.sent.rawValue, reason: nil, count: Int(sent)) }
            }
            return status
        }
    }

    public func ping() async throws {
        return try await leased { [self] client in
            for try await _ in try await client.query("SELECT 1", logger: logger).decode(Int32.self) {}
        }
    }

    public func queues() async throws -> [String: AppQueue] {
        return try await leased { [self] client in
            var queues: [String: AppQueue] = [:]
            for try await (app, n, oldest) in try await client.query(
                "SELECT app_id, COUNT(*), MIN(created_at) FROM deliveries WHERE state IN ('pending', 'sending') GROUP BY app_id", logger: logger
            ).decode((String, Int64, Int64?).self) {
                queues[app] = AppQueue(depth: Int(n), oldest: oldest.map(Date.init(milliseconds:)))
            }
            return queues
        }
    }
}
