public import Foundation
import PostgresNIO

/// PostgresStore: read markers and the dismissals they arm (the same rules as SQLite's). Each
/// call is a leased one: it waits for the database within the store's deadlines, and a shutdown
/// does not wait on a database that went silent.
extension PostgresStore {
    public func record(_ marker: ReadMarker, window: TimeInterval, now: Date) async throws -> Bool {
        let ms = now.milliseconds
        let windowMs = Int64(window * 1_000)
        let expires = now.addingTimeInterval(readMarkerMemory).milliseconds
        return try await leased { [self] client in try await client.withTransaction(logger: logger) { db in
            let fresh = try await Self.count(db.query(
                "INSERT INTO read_markers (digest, expires_at) VALUES (\(marker.digest), \(expires)) ON CONFLICT (digest) DO NOTHING RETURNING digest",
                logger: logger))
            guard fresh == 1 else { return false }
            // One statement for every sibling, in row order (two markers lock rows alike).
            let siblings = Array(Set(marker.siblings)).sorted()
            guard !siblings.isEmpty else { return true }
            try await db.query(
                """
                INSERT INTO dismissals (device_row, conversation, app_id, up_to, issued_at, marked_at, generation, due_at, sent_at)
                SELECT s, \(marker.conversation), \(marker.app), \(marker.upTo), \(marker.issuedAt), \(ms), 1, \(ms), NULL
                FROM unnest(\(siblings)::BIGINT[]) AS s
                ON CONFLICT (device_row, conversation) DO UPDATE SET
                  up_to = excluded.up_to, issued_at = excluded.issued_at, marked_at = excluded.marked_at,
                  generation = dismissals.generation + 1,
                  due_at = CASE
                    WHEN dismissals.due_at IS NOT NULL THEN dismissals.due_at
                    WHEN dismissals.sent_at IS NULL OR dismissals.sent_at + \(windowMs) <= excluded.due_at THEN excluded.due_at
                    ELSE dismissals.sent_at + \(windowMs) END
                WHERE excluded.issued_at >= dismissals.issued_at
                """, logger: logger)
            return true
        } }
    }

    public func dueDismissals(now: Date, limit: Int) async throws -> [PendingDismissal] {
        try await leased { [self] client in
            try await Self.dismissals(client.query(
                """
                SELECT device_row, app_id, conversation, up_to, generation, marked_at FROM dismissals
                WHERE due_at IS NOT NULL AND due_at <= \(now.milliseconds) ORDER BY due_at LIMIT \(Int64(limit))
                """, logger: logger))
        }
    }

    public func nextDismissalDue() async throws -> Date? {
        try await leased { [self] client in
            // Every row read (one): a sequence left unread holds its connection.
            var earliest: Int64?
            for try await due in try await client.query("SELECT MIN(due_at) FROM dismissals WHERE due_at IS NOT NULL", logger: logger).decode(Int64?.self) {
                earliest = due
            }
            return earliest.map(Date.init(milliseconds:))
        }
    }

    public func dismissalsSent(_ sent: [PendingDismissal], window: TimeInterval, now: Date) async throws {
        guard !sent.isEmpty else { return }
        let ms = now.milliseconds
        let windowEnd = now.addingTimeInterval(window).milliseconds
        try await leased { [self] client in try await client.withTransaction(logger: logger) { db in
            for d in sent.sorted(by: { ($0.deviceRowID, $0.conversation) < ($1.deviceRowID, $1.conversation) }) {
                try await db.query(
                    """
                    UPDATE dismissals SET sent_at = \(ms), due_at = CASE WHEN generation = \(d.generation) THEN NULL ELSE \(windowEnd) END
                    WHERE device_row = \(d.deviceRowID) AND conversation = \(d.conversation)
                    """, logger: logger)
            }
        } }
    }

    public func recentDismissals(deviceRowIDs: [Int64], since: Date, limit: Int) async throws -> [Int64: [PendingDismissal]] {
        guard !deviceRowIDs.isEmpty else { return [:] }
        let rows = try await leased { [self] client in
            try await Self.dismissals(client.query(
                """
                SELECT device_row, app_id, conversation, up_to, generation, marked_at FROM (
                  SELECT *, row_number() OVER (PARTITION BY device_row ORDER BY marked_at DESC) AS n FROM dismissals
                  WHERE device_row = ANY(\(Array(Set(deviceRowIDs)))::BIGINT[]) AND marked_at >= \(since.milliseconds)
                ) recent WHERE n <= \(Int64(limit)) ORDER BY device_row, marked_at DESC
                """, logger: logger))
        }
        return Dictionary(grouping: rows, by: \.deviceRowID)
    }

    public func pruneDismissals(markedBefore: Date, now: Date) async throws -> Int {
        try await leased { [self] client in
            let markers = try await Self.count(client.query(
                "DELETE FROM read_markers WHERE expires_at < \(now.milliseconds) RETURNING expires_at", logger: logger))
            let dismissals = try await Self.count(client.query(
                "DELETE FROM dismissals WHERE marked_at < \(markedBefore.milliseconds) AND due_at IS NULL RETURNING marked_at", logger: logger))
            return markers + dismissals
        }
    }

    static func dismissals(_ rows: PostgresRowSequence) async throws -> [PendingDismissal] {
        var out: [PendingDismissal] = []
        for try await (device, app, conversation, upTo, generation, markedAt) in rows.decode((Int64, String, String, String, Int64, Int64).self) {
            out.append(PendingDismissal(
                deviceRowID: device, app: app, conversation: conversation, upTo: upTo, generation: generation, markedAt: Date(milliseconds: markedAt)))
        }
        return out
    }
}
