import HeraldCore
import Logging
import PostgresNIO

/// PostgresStore: coalescing deliveries (`Coalescing`), for an enqueue's events and a fan-out's pages.
extension PostgresStore {
    /// Writes a coalescing event's deliveries to `rows` (ascending, unique) in `db`'s transaction:
    /// each device's delivery still pending for the key is dropped (`coalesced`) and the new one
    /// takes its time, or the new one waits for the device's slot, which moves a window on. The
    /// slots are locked first (created where missing), so instances coalescing the same device
    /// queue instead of both sending. A device gone since routing gets nothing.
    /// - Parameter lease: per row, whether it may be leased to this instance's lanes at once (only
    ///   one due now is).
    /// - Returns: each delivery written: its id, device row, APNs id, and whether it was leased.
    static func insertCoalescing(
        _ db: PostgresConnection, eventID: String, app: String, coalescing: Coalescing, rows: [Int64], apnsIDs: [String], lease: [Bool],
        expiresAt: Int64, now ms: Int64, leaseUntil: Int64, logger: Logger
    ) async throws -> [(id: Int64, row: Int64, apnsID: String, leased: Bool)] {
        guard !rows.isEmpty else { return [] }
        let key = coalescing.key
        try await db.query(
            """
            INSERT INTO coalescing_slots (device_row, key, next_slot)
            SELECT t.r, \(key), 0 FROM unnest(\(rows)::BIGINT[]) AS t(r) JOIN devices d ON d.id = t.r ORDER BY t.r
            ON CONFLICT (device_row, key) DO NOTHING
            """, logger: logger)
        var slots: [Int64: (next: Int64, pending: Int64?)] = [:]
        for try await (row, next, pending) in try await db.query(
            """
            SELECT device_row, next_slot, pending FROM coalescing_slots WHERE key = \(key) AND device_row = ANY(\(rows))
            ORDER BY device_row FOR UPDATE
            """, logger: logger
        ).decode((Int64, Int64, Int64?).self) {
            slots[row] = (next, pending)
        }
        var replaced: [Int64: Int64] = [:]
        let waiting = slots.values.compactMap(\.pending)
        if !waiting.isEmpty {
            for try await (row, due) in try await db.query(
                """
                UPDATE deliveries SET state = 'dropped', last_reason = \(Coalescing.droppedReason), lease_until = NULL, updated_at = \(ms)
                WHERE id = ANY(\(waiting)) AND state = 'pending' RETURNING device_row, next_attempt_at
                """, logger: logger
            ).decode((Int64, Int64).self) {
                replaced[row] = due
            }
        }
        var kept: [Int64] = [], ids: [String] = [], dues: [Int64] = [], leases: [Bool] = [], nextSlots: [Int64: Int64] = [:]
        for (i, row) in rows.enumerated() {
            guard let slot = slots[row] else { continue }  // the device is gone
            let placed = coalescing.place(now: ms, nextSlot: slot.next, replacedDue: replaced[row])
            kept.append(row)
            ids.append(apnsIDs[i])
            dues.append(placed.due)
            leases.append(lease[i] && placed.due <= ms)
            nextSlots[row] = placed.nextSlot
        }
        var written: [(id: Int64, row: Int64, apnsID: String, leased: Bool)] = []
        for try await (id, row, apnsID, leased) in try await db.query(
            """
            INSERT INTO deliveries (event_id, device_row, app_id, state, attempts, next_attempt_at, lease_until, apns_id, expires_at, created_at, updated_at, platform)
            SELECT \(eventID), t.r, \(app), CASE WHEN t.l THEN 'sending' ELSE 'pending' END, CASE WHEN t.l THEN 1 ELSE 0 END, t.due,
              CASE WHEN t.l THEN \(leaseUntil) END, t.n, \(expiresAt), \(ms), \(ms), d.platform
            FROM unnest(\(kept)::BIGINT[], \(ids)::TEXT[], \(leases)::BOOLEAN[], \(dues)::BIGINT[]) AS t(r, n, l, due)
              JOIN devices d ON d.id = t.r
            RETURNING id, device_row, apns_id, state = 'sending'
            """, logger: logger
        ).decode((Int64, Int64, String, Bool).self) {
            written.append((id, row, apnsID, leased))
        }
        guard !written.isEmpty else { return [] }
        try await db.query(
            """
            UPDATE coalescing_slots s SET next_slot = u.n, pending = u.p
            FROM unnest(\(written.map(\.row))::BIGINT[], \(written.map { nextSlots[$0.row] ?? ms })::BIGINT[], \(written.map(\.id))::BIGINT[]) AS u(r, n, p)
            WHERE s.key = \(key) AND s.device_row = u.r
            """, logger: logger)
        return written
    }
}
