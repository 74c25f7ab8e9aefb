public import Foundation
import GRDB

/// SQLiteStore: read markers and the dismissals they arm.
extension SQLiteStore {
    public func record(_ marker: ReadMarker, window: TimeInterval, now: Date) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO read_markers (digest, expires_at) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING",
                arguments: [marker.digest, now.addingTimeInterval(readMarkerMemory).milliseconds])
            guard db.changesCount == 1 else { return false }
            let arm = try db.cachedStatement(sql: Self.armDismissalSQL)
            let ms = now.milliseconds
            for device in marker.siblings {
                try arm.execute(arguments: [
                    device, marker.conversation, marker.app, marker.upTo, marker.issuedAt, ms, ms, Int64(window * 1_000),
                ])
            }
            return true
        }
    }

    /// Arms one sibling's dismissal: a new row is due now; an armed one takes the newer position;
    /// one sent within the window is due when the window ends. A marker older than the row's
    /// (by `issued_at`) changes nothing. Arguments: device, conversation, app, up_to, issued_at,
    /// marked_at, due_at (now), window (ms).
    static let armDismissalSQL = """
        INSERT INTO dismissals (device_row, conversation, app_id, up_to, issued_at, marked_at, generation, due_at, sent_at)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, NULL)
        ON CONFLICT (device_row, conversation) DO UPDATE SET
          up_to = excluded.up_to, issued_at = excluded.issued_at, marked_at = excluded.marked_at,
          generation = dismissals.generation + 1,
          due_at = CASE
            WHEN dismissals.due_at IS NOT NULL THEN dismissals.due_at
            WHEN dismissals.sent_at IS NULL OR dismissals.sent_at + ?8 <= excluded.due_at THEN excluded.due_at
            ELSE dismissals.sent_at + ?8 END
        WHERE excluded.issued_at >= dismissals.issued_at
        """

    public func dueDismissals(now: Date, limit: Int) async throws -> [PendingDismissal] {
        try readers.read { db in
            try db.rows(
                """
                SELECT device_row, app_id, conversation, up_to, generation, marked_at FROM dismissals
                WHERE due_at IS NOT NULL AND due_at <= CAST(?1 AS INTEGER) ORDER BY due_at LIMIT \(max(0, limit))
                """, [String(now.milliseconds)], Self.dismissal)
        }
    }

    public func nextDismissalDue() async throws -> Date? {
        try readers.read { db in
            try db.rows("SELECT MIN(due_at) FROM dismissals WHERE due_at IS NOT NULL", []) { $0.optionalInteger(0) }.first ?? nil
        }.map(Date.init(milliseconds:))
    }

    public func dismissalsSent(_ sent: [PendingDismissal], window: TimeInterval, now: Date) async throws {
        guard !sent.isEmpty else { return }
        try await pool.write { db in
            let update = try db.cachedStatement(sql: Self.dismissalSentSQL)
            for d in sent {
                try update.execute(arguments: [now.milliseconds, d.generation, now.addingTimeInterval(window).milliseconds, d.deviceRowID, d.conversation])
            }
        }
    }

    /// Arguments: now, the generation sent, the window's end, device, conversation.
    static let dismissalSentSQL = """
        UPDATE dismissals SET sent_at = ?1, due_at = CASE WHEN generation = ?2 THEN NULL ELSE ?3 END
        WHERE device_row = ?4 AND conversation = ?5
        """

    /// On the send path (a sealed alert's batch): one statement for the batch's devices (a JSON
    /// array of their rows), read through `readers`, as routing reads, not GRDB's pool, whose
    /// checkout cost a sealed single event more than its sealing.
    public func recentDismissals(deviceRowIDs: [Int64], since: Date, limit: Int) async throws -> [Int64: [PendingDismissal]] {
        guard !deviceRowIDs.isEmpty else { return [:] }
        let rows = "[" + Set(deviceRowIDs).map(String.init).joined(separator: ",") + "]"
        let found = try readers.read { db in try db.rows(Self.recentDismissalsSQL, [rows, String(since.milliseconds)], Self.dismissal) }
        return Dictionary(grouping: found, by: \.deviceRowID).mapValues { Array($0.prefix(max(0, limit))) }
    }

    /// Arguments: the devices' rows (a JSON array), the oldest `marked_at`.
    static let recentDismissalsSQL = """
        SELECT device_row, app_id, conversation, up_to, generation, marked_at FROM dismissals
        WHERE device_row IN (SELECT value FROM json_each(?1)) AND marked_at >= CAST(?2 AS INTEGER)
        ORDER BY device_row, marked_at DESC
        """

    public func pruneDismissals(markedBefore: Date, now: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM read_markers WHERE expires_at < ?", arguments: [now.milliseconds])
            var n = db.changesCount
            try db.execute(sql: "DELETE FROM dismissals WHERE marked_at < ? AND due_at IS NULL", arguments: [markedBefore.milliseconds])
            n += db.changesCount
            return n
        }
    }

    /// A row of `device_row, app_id, conversation, up_to, generation, marked_at`.
    static func dismissal(_ row: SQLiteRow) -> PendingDismissal {
        PendingDismissal(
            deviceRowID: row.integer(0), app: row.text(1), conversation: row.text(2), upTo: row.text(3), generation: row.integer(4),
            markedAt: Date(milliseconds: row.integer(5)))
    }
}
