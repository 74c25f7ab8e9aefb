public import Foundation
import GRDB

/// SQLiteStore: operations.
extension SQLiteStore {
    public func deviceCount(app: String) async throws -> Int {
        try await pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM devices WHERE app_id = ?", arguments: [app]) ?? 0 }
    }

    public func deleteStaleDevices(lastSeenBefore: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM devices WHERE last_seen < ?", arguments: [lastSeenBefore.milliseconds])
            return db.changesCount
        }
    }

    /// The counters the triggers keep, and the oldest pending delivery off the lane index: no
    /// query here counts rows of the tables.
    public func stats() async throws -> StoreStats {
        let counts = try await pool.read { db in
            var counts = StoreStats.Counts()
            for row in try Row.fetchAll(db, sql: "SELECT app_id, platform, n FROM device_counts") {
                counts.devices.append((row[0], row[1], row[2]))
            }
            for row in try Row.fetchAll(db, sql: "SELECT state, reason, n FROM delivery_counts") {
                counts.deliveries.append((row[0], row[1], row[2]))
            }
            return counts
        }
        return StoreStats(counts, queues: try await queues())
    }

    public func event(id: String) async throws -> EventStatus? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT app_id, template, created_at, expires_at FROM events WHERE id = ?", arguments: [id]) else {
                return nil
            }
            var status = EventStatus(
                id: id, app: row[0], template: row[1], createdAt: Date(milliseconds: row[2]), expiresAt: Date(milliseconds: row[3]))
            for row in try Row.fetchAll(db, sql: "SELECT state, last_reason, COUNT(*) FROM deliveries WHERE event_id = ? GROUP BY state, last_reason", arguments: [id]) {
                status.add(state: row[0], reason: row[1], count: row[2])
            }
            if let job = try Row.fetchOne(db, sql: "SELECT devices, expanded, finished_at, sent FROM fanouts WHERE event_id = ?", arguments: [id]) {
                status.fanout = FanoutProgress(devices: job[0], expanded: job[1], finished: (job[2] as Int64?) != nil)
                if job[3] as Int > 0 { status.add(state: DeliveryState.sent.rawValue, reason: nil, count: job[3]) }
            }
            return status
        }
    }

    /// Nothing to fold (the totals are written in place); drops counters at zero, since failure
    /// reasons are a push service's words and a Web Push service is anyone's.
    public func compactCounters() async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM delivery_counts WHERE n = 0 AND reason <> ''")
            try db.execute(sql: "DELETE FROM device_counts WHERE n = 0")
        }
    }

    public func pruneDeadTokens(deadBefore: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM dead_tokens WHERE dead_at < ?", arguments: [deadBefore.milliseconds])
            return db.changesCount
        }
    }

    public func pruneFinished(createdBefore before: Date, after cursor: PruneCursor?, limit: Int) async throws -> PruneBatch {
        let batch = try await pruneBatch(createdBefore: before, after: cursor, limit: limit)
        // The pages a batch freed go back to the database file now, in the pruner's time: else the
        // commit that next crosses the WAL's checkpoint threshold (a publish) copies them.
        if batch.deliveries > 0 { try await pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)") } }
        return batch
    }

    func pruneBatch(createdBefore before: Date, after cursor: PruneCursor?, limit: Int) async throws -> PruneBatch {
        try await pool.write { db in
            let start = cursor ?? PruneCursor(createdAt: .min, eventID: "")
            // Once a pass: coalescing slots last used before the cutoff no longer hold anything back.
            if cursor == nil {
                try db.execute(sql: "DELETE FROM coalescing_slots WHERE next_slot < ?", arguments: [before.milliseconds])
            }
            let candidates = try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT created_at, id FROM events WHERE created_at < ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?
                    """), arguments: [before.milliseconds, start.createdAt, start.eventID, pruneCandidates])
            let unfinished = try db.cachedStatement(
                sql: """
                    SELECT 1 FROM deliveries WHERE event_id = ?1 AND state IN ('pending', 'sending')
                    UNION ALL SELECT 1 FROM fanouts WHERE event_id = ?1 AND finished_at IS NULL LIMIT 1
                    """)
            let deleteDeliveries = try db.cachedStatement(
                sql: "DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE event_id = ? LIMIT ?)")
            let anyLeft = try db.cachedStatement(sql: "SELECT 1 FROM deliveries WHERE event_id = ? LIMIT 1")
            let deleteEvent = try db.cachedStatement(sql: "DELETE FROM events WHERE id = ?")
            let dropJobSent = try db.cachedStatement(
                sql: "UPDATE delivery_counts SET n = n - (SELECT sent FROM fanouts WHERE event_id = ?1) WHERE state = 'sent' AND reason = '' AND EXISTS (SELECT 1 FROM fanouts WHERE event_id = ?1)")
            var batch = PruneBatch(events: 0, deliveries: 0, next: cursor)
            var budget = max(1, limit)
            for row in candidates {
                let here = PruneCursor(createdAt: row[0], eventID: row[1])
                if try Int.fetchOne(unfinished, arguments: [here.eventID]) != nil {
                    batch.next = here
                    continue
                }
                try deleteDeliveries.execute(arguments: [here.eventID, budget])
                budget -= db.changesCount
                batch.deliveries += db.changesCount
                // Out of budget with deliveries left: the next batch starts at this event again.
                if budget <= 0, try Int.fetchOne(anyLeft, arguments: [here.eventID]) != nil {
                    // (From the start when this was the pass's first event: a nil cursor would end the pass.)
                    batch.next = batch.next ?? start
                    return batch
                }
                // A job's sent deliveries left no rows: their counter goes with the job.
                try dropJobSent.execute(arguments: [here.eventID])
                try deleteEvent.execute(arguments: [here.eventID])
                batch.events += 1
                batch.next = here
                if budget <= 0 { return batch }
            }
            if candidates.count < pruneCandidates { batch.next = nil }
            return batch
        }
    }

    /// Closes the database: every later call throws (a store gone from under the API).
    public func close() throws {
        readers.close()
        try pool.close()
    }

    public func ping() async throws {
        _ = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    public func queues() async throws -> [String: AppQueue] {
        try await pool.read { db in
            var queues: [String: AppQueue] = [:]
            for row in try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT app_id, COUNT(*), MIN(created_at) FROM deliveries WHERE \(everyLane) AND state IN ('pending', 'sending')
                    GROUP BY app_id
                    """))
            {
                queues[row[0]] = AppQueue(depth: row[1], oldest: (row[2] as Int64?).map(Date.init(milliseconds:)))
            }
            return queues
        }
    }
}
