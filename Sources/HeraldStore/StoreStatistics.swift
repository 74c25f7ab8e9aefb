public import Foundation

/// Counts for `/v1/stats`.
public struct StoreStats: Hashable, Sendable {
    /// app → platform → devices.
    public var devices: [String: [String: Int]] = [:]
    public var deliveries: [DeliveryState: Int] = [:]
    /// Failed deliveries by their push service's reason: each is one final attempt, as
    /// `herald_delivery_attempts_total{outcome="failed"|"token_dead"}` counts it.
    public var failureReasons: [String: Int] = [:]
    /// Deliveries dropped unsent, by why (a token found dead drops its other pending deliveries).
    public var droppedReasons: [String: Int] = [:]
    public var oldestPending: Date?

    public init() {}

    /// The counter rows a store keeps: (app, platform, devices) and (state, reason, deliveries).
    struct Counts {
        var devices: [(String, String, Int)] = []
        var deliveries: [(String, String, Int)] = []
    }

    /// Stats from the counter rows (rows at zero left out) and the queues.
    init(_ counts: Counts, queues: [String: AppQueue]) {
        for (app, platform, n) in counts.devices where n != 0 { devices[app, default: [:]][platform, default: 0] += n }
        for (state, reason, n) in counts.deliveries where n != 0 {
            guard let state = DeliveryState(rawValue: state) else { continue }
            deliveries[state, default: 0] += n
            guard !reason.isEmpty else { continue }
            switch state {
            case .failed: failureReasons[reason, default: 0] += n
            case .dropped: droppedReasons[reason, default: 0] += n
            default: break
            }
        }
        oldestPending = queues.values.compactMap(\.oldest).min()
    }
}

/// Counts for `/v1/stats` and readiness.
public protocol StoreStatistics: Sendable {
    /// A query that touches no table: throws when the database does not answer (`/readyz`).
    func ping() async throws
    /// Registrations, deliveries by state and failure reasons from counters the store keeps in
    /// the transactions that change the rows (not by counting rows), and the oldest pending delivery.
    func stats() async throws -> StoreStats
    /// Each app's deliveries pending or being sent, and the creation of the oldest: read off the
    /// lane index, for `/metrics` on every scrape.
    func queues() async throws -> [String: AppQueue]
    /// One event and what became of its deliveries; nil when there is no such event (never
    /// accepted, or pruned after the retention).
    func event(id: String) async throws -> EventStatus?
}

/// Herald's durable state: every role, implemented by SQLite and PostgreSQL alike. Consumers take
/// only the role they use. Every method is one transaction: it happens whole or not at all.
/// Deleting what is done with: events whose deliveries all finished (sent, failed, expired or
/// dropped), with those deliveries, once older than the retention.
public protocol Retention: Sendable {
    /// One bounded batch: the oldest events created before `before`, after `cursor`, whose
    /// deliveries have all finished, deleted with their deliveries, at most `limit` rows of
    /// deliveries in all (a larger event loses `limit` of them now, the rest in later batches).
    /// Events with a delivery still pending or sending are passed over. One transaction.
    func pruneFinished(createdBefore before: Date, after cursor: PruneCursor?, limit: Int) async throws -> PruneBatch
    /// Folds counter changes not yet added to their totals (PostgreSQL's deltas, which grow with
    /// every write until folded) and drops counters at zero; `stats` reads correctly either way.
    /// The retention pass runs it every minute.
    func compactCounters() async throws
    /// Forgets tokens that died before `deadBefore` (the retention pass, with 30 days); returns how many.
    func pruneDeadTokens(deadBefore: Date) async throws -> Int
    /// Forgets read markers past their replay window and the dismissals marked before
    /// `markedBefore` that are not armed (the retention pass, with a day); returns how many rows went.
    func pruneDismissals(markedBefore: Date, now: Date) async throws -> Int
}

/// How long a dead token is remembered: a homeserver learns of it on its pusher's next notify.
public let deadTokenMemory: TimeInterval = 30 * 86_400

/// Events one pruning batch looks at, at most.
let pruneCandidates = 256

/// Where a pruning pass has got to: the last event it looked at, in (created_at, id) order.
public struct PruneCursor: Hashable, Sendable {
    public var createdAt: Int64
    public var eventID: String

    public init(createdAt: Int64, eventID: String) {
        self.createdAt = createdAt
        self.eventID = eventID
    }
}

/// What one batch deleted, and where the next one starts (nil: nothing older is left).
public struct PruneBatch: Hashable, Sendable {
    public var events: Int
    public var deliveries: Int
    public var next: PruneCursor?

    public init(events: Int, deliveries: Int, next: PruneCursor?) {
        self.events = events
        self.deliveries = deliveries
        self.next = next
    }
}
