public import Foundation
import GRDB
import HeraldCore
public import HeraldPushCore

/// SQLiteStore: outbox.
extension SQLiteStore {
    /// A claim joins the group commit, beside the enqueues that made the work it claims.
    public func claimDue(app: String, platform: Platform, limit: Int, now: Date, lease: Duration) async throws -> [ClaimedDelivery] {
        guard case .claimed(let claimed) = try await writes.submit(.claim(app: app, platform: platform, limit: limit, now: now, lease: lease))
        else { preconditionFailure("a claim commits as a claim") }
        return claimed
    }

    static func claim(
        app: String, platform: Platform, limit: Int, now: Date, lease: Duration, _ db: Database, _ statements: WriterStatements
    ) throws -> [ClaimedDelivery] {
        let ms = now.milliseconds
        // Read off SQLite by position, not through GRDB's rows: a `Row` cursor builds a
        // dictionary of its 26 column names, lowercased, on every claim, and copies each row.
        func bind(_ statement: Statement) throws -> SQLiteParameters {
            let values = SQLiteParameters(statement)
            try values.text(1, app)
            try values.text(2, platform.rawValue)
            try values.integer(3, ms)
            try values.integer(4, Int64(limit))
            return values
        }
        // One push per event and claim: a fan-out page's deliveries share it.
        var pushes: [String: RenderedPush] = [:]
        func delivery(_ row: SQLiteRow) -> (nextAttemptAt: Int64, delivery: ClaimedDelivery) {
            let eventID = row.text(1)
            let push = pushes[eventID] ?? {
                let push = RenderedPush(
                    storedPushType: row.text(5), storedPriority: Int(row.integer(6)), collapseID: row.optionalText(7),
                    payload: row.bytes(8), fcmData: RenderedPush.fcmData(json: row.optionalText(9)))
                pushes[eventID] = push
                return push
            }()
            var delivery = ClaimedDelivery(
                id: row.integer(0), eventID: eventID, device: Self.deviceRecord(row, from: 15), push: push,
                apnsID: UUID(uuidString: row.text(2)) ?? UUID(),
                attempt: Int(row.integer(3)) + 1,
                expiresAt: Date(milliseconds: row.integer(4)), acceptedAt: Date(milliseconds: row.integer(11)),
                requestID: row.optionalText(12), template: row.optionalText(13))
            delivery.fanout = row.integer(14) != 0
            return (row.integer(10), delivery)
        }
        // The due ones in one statement, read in (next_attempt_at, id) order straight off the
        // lane index; lapsed leases (rare) by a second scan. A UNION or an OR of the two would
        // build a temporary b-tree on every claim.
        var due = try bind(
            db.cachedStatement(sql: """
                SELECT \(Self.claimColumns)
                FROM (SELECT id FROM deliveries
                      WHERE app_id = ? AND platform = ? AND state = 'pending' AND next_attempt_at <= ?
                      ORDER BY next_attempt_at, id LIMIT ?) due
                JOIN deliveries dl ON dl.id = due.id
                JOIN events e ON e.id = dl.event_id
                JOIN devices d ON d.id = dl.device_row
                """)
        ).rows(delivery)
        let lapsed = try bind(
            db.cachedStatement(sql: """
                SELECT id FROM deliveries WHERE app_id = ? AND platform = ? AND state = 'sending' AND lease_until <= ? LIMIT ?
                """)
        ).rows { $0.integer(0) }
        if !lapsed.isEmpty {
            let read = SQLiteParameters(
                try db.cachedStatement(sql: """
                    SELECT \(Self.claimColumns)
                    FROM deliveries dl JOIN events e ON e.id = dl.event_id JOIN devices d ON d.id = dl.device_row
                    WHERE dl.id = ?
                    """))
            for id in lapsed {
                try read.integer(1, id)
                due += try read.rows(delivery)
            }
            due.sort { ($0.nextAttemptAt, $0.delivery.id) < ($1.nextAttemptAt, $1.delivery.id) }
        }
        let claimed = due.prefix(limit).map(\.delivery)
        // Those the first scan found were pending; a lapsed lease stays `sending`.
        let relapsed = Set(lapsed)
        var counts = DeliveryCounts()
        counts.move(from: (.pending, nil), to: (.sending, nil), count: claimed.count(where: { !relapsed.contains($0.id) }))
        try counts.apply(db, statements)
        let leaseUntil = ms + Int64(lease.seconds * 1000)
        let claim = try statements.statement(
            "UPDATE deliveries SET state = 'sending', lease_until = ?, attempts = attempts + 1, updated_at = ? WHERE id = ?", db)
        let values = SQLiteParameters(claim)
        for delivery in claimed {
            try values.integer(1, leaseUntil)
            try values.integer(2, ms)
            try values.integer(3, delivery.id)
            try values.execute()
        }
        return claimed
    }

    /// What a claim reads, by position: the delivery (0–4), its event's push (5–9),
    /// `next_attempt_at` (10, for the order), its creation (11), its event's request (12) and
    /// template (13), whether it is a fan-out's (14), then the device's columns (from 15).
    static let claimColumns = """
        dl.id, dl.event_id, dl.apns_id, dl.attempts, dl.expires_at,
        e.push_type, e.priority, e.collapse_id, e.payload, e.fcm_data, dl.next_attempt_at, dl.created_at, e.request_id, e.template, e.fanout, d.*
        """

    /// Outcomes join the group commit: with publishes arriving, they share their transaction and
    /// WAL sync instead of taking the writer for one of their own.
    public func complete(_ outcomes: [DeliveryOutcome], now: Date) async throws {
        guard !outcomes.isEmpty else { return }
        _ = try await writes.submit(.complete(outcomes, now: now))
    }

    static func record(_ outcomes: [DeliveryOutcome], now: Date, _ db: Database, _ statements: WriterStatements) throws {
        let ms = now.milliseconds
        var counts = DeliveryCounts()
        var sentByJob: [String: Int] = [:]
        for outcome in outcomes {
            switch outcome {
            case .sent(let id, nil):
                try Self.setState(db, statements, id, .sent, reason: nil, now: ms, counts: &counts)
            case .sent(let id, let job?):
                // A job's delivery, sent: nothing of it to remember but the job's count (its
                // state's counter goes with the row, by the delete trigger).
                try statements.statement("DELETE FROM deliveries WHERE id = ?", db).execute(arguments: [id])
                guard db.changesCount == 1 else { continue }
                counts.add(.sent, nil, 1)
                sentByJob[job, default: 0] += 1
            case .retry(let id, let at, let reason):
                try Self.retry(db, statements, id, at: at, reason: reason, now: ms, counts: &counts)
            case .retryDevice(let id, let deviceRowID, let at, let reason):
                try Self.retry(db, statements, id, at: at, reason: reason, now: ms, counts: &counts)
                try db.execute(
                    sql: "UPDATE deliveries SET next_attempt_at = ?, updated_at = ? WHERE device_row = ? AND state = 'pending' AND next_attempt_at < ?",
                    arguments: [at.milliseconds, ms, deviceRowID, at.milliseconds])
            case .failed(let id, let reason):
                try Self.setState(db, statements, id, .failed, reason: reason, now: ms, counts: &counts)
            case .expired(let id):
                try Self.setState(db, statements, id, .expired, reason: "expired", now: ms, counts: &counts)
            case .tokenDead(let id, let deviceRowID, let since, let reason):
                try Self.setState(db, statements, id, .failed, reason: reason, now: ms, counts: &counts)
                // Remembered past the device's deletion, for requests that name their device themselves.
                try db.execute(
                    sql: """
                        INSERT INTO dead_tokens (app_id, token, reason, dead_at) SELECT app_id, token, ?, ? FROM devices
                        WHERE id = ? AND (? OR updated_at <= ?)
                        ON CONFLICT (app_id, token) DO UPDATE SET reason = excluded.reason, dead_at = excluded.dead_at
                        """,
                    arguments: [reason, (since ?? now).milliseconds, deviceRowID, since == nil, (since ?? now).milliseconds])
                if let since {
                    // Compare-and-delete: a registration after APNs's timestamp keeps the device.
                    try db.execute(
                        sql: "DELETE FROM devices WHERE id = ? AND updated_at <= ?",
                        arguments: [deviceRowID, since.milliseconds])
                } else {
                    try db.execute(
                        sql: "UPDATE devices SET disabled_reason = ? WHERE id = ?", arguments: [reason, deviceRowID])
                    for row in try Row.fetchAll(
                        db, sql: "SELECT state, COUNT(*) FROM deliveries WHERE device_row = ? AND state IN ('pending', 'sending') AND id <> ? GROUP BY state",
                        arguments: [deviceRowID, id])
                    {
                        guard let state = DeliveryState(rawValue: row[0]) else { continue }
                        counts.move(from: (state, nil), to: (.dropped, reason), count: row[1])
                    }
                    try db.execute(
                        sql: """
                            UPDATE deliveries SET state = 'dropped', last_reason = ?, lease_until = NULL, updated_at = ?
                            WHERE device_row = ? AND state IN ('pending', 'sending') AND id <> ?
                            """,
                        arguments: [reason, ms, deviceRowID, id])
                }
            }
        }
        for (job, n) in sentByJob {
            try db.cachedStatement(sql: "UPDATE fanouts SET sent = sent + ? WHERE event_id = ?").execute(arguments: [n, job])
        }
        try counts.apply(db, statements)
    }

    public func expire(now: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE deliveries SET state = 'expired', last_reason = 'expired', lease_until = NULL, updated_at = ?
                    WHERE \(everyLane) AND state = 'pending' AND expires_at <= ?
                    """,
                arguments: [now.milliseconds, now.milliseconds])
            let expired = db.changesCount
            var counts = DeliveryCounts()
            counts.move(from: (.pending, nil), to: (.expired, nil), count: expired)
            try counts.apply(db, statements)
            return expired
        }
    }
}
