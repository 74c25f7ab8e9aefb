import Foundation
import HeraldCore
import HeraldPushCore

/// A registered device as stored.
public struct DeviceRecord: Hashable, Sendable {
    /// The store's own id for the device.
    public var rowID: Int64
    public var app: String
    public var platform: Platform
    /// Normalised (APNs: lowercase hex).
    public var token: String
    /// What its push service keeps for it (environment, token kind, subscription keys).
    public var attributes: DeviceAttributes
    /// An app-chosen stable id (SafeWhisper's X-Device-ID).
    public var deviceID: String?
    public var createdAt: Date
    /// The last registration; a 410 older than this keeps the device.
    public var updatedAt: Date
    public var lastSeen: Date
    /// Set when the push service called the token bad for its app and environment.
    public var disabledReason: String?
    /// Set by `admit` for a device another route registered (the native API, a compatibility
    /// route): a Matrix notify does not push to it unless its app says so.
    public var registeredElsewhere = false

    public init(
        rowID: Int64, app: String, platform: Platform, token: String, attributes: DeviceAttributes, deviceID: String? = nil,
        createdAt: Date, updatedAt: Date, lastSeen: Date, disabledReason: String? = nil
    ) {
        self.rowID = rowID
        self.app = app
        self.platform = platform
        self.token = token
        self.attributes = attributes
        self.deviceID = deviceID
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.lastSeen = lastSeen
        self.disabledReason = disabledReason
    }
}

/// What a registration says about a device.
public struct Registration: Sendable {
    public var app: String
    public var token: DeviceToken
    /// What its push service keeps for it: the environment of its builds, and the service's own
    /// values (a Web Push subscription's keys; its endpoint is `token`). The token's kind is
    /// added from `token` when stored.
    public var attributes: DeviceAttributes
    public var deviceID: String?
    public var watchSet: WatchSet
    /// The token is now the only one of `deviceID` (SafeWhisper's device switch): other devices
    /// of the app with that device id are removed in the same transaction.
    public var replacesDeviceTokens: Bool

    public init(
        app: String, token: DeviceToken, attributes: DeviceAttributes, deviceID: String? = nil, watchSet: WatchSet,
        replacesDeviceTokens: Bool = false
    ) {
        self.app = app
        self.token = token
        self.attributes = attributes
        self.deviceID = deviceID
        self.watchSet = watchSet
        self.replacesDeviceTokens = replacesDeviceTokens
    }

    /// The attributes as stored: with the token's kind.
    var storedAttributes: DeviceAttributes { attributes.setting(tokenKind: token.kind) }
}

/// A device a request names itself, with no registration step (a Matrix pusher's pushkey): what
/// a registration would say (no watch keys), and when the device's token was last registered
/// (the pusher's `pushkey_ts`; the epoch when not known).
public struct NamedDevice: Sendable {
    public var app: String
    public var token: DeviceToken
    /// As a registration's (`Registration.attributes`).
    public var attributes: DeviceAttributes
    public var registeredAt: Date

    public init(app: String, token: DeviceToken, attributes: DeviceAttributes, registeredAt: Date) {
        self.app = app
        self.token = token
        self.attributes = attributes
        self.registeredAt = registeredAt
    }

    /// The attributes as stored: with the token's kind.
    var storedAttributes: DeviceAttributes { attributes.setting(tokenKind: token.kind) }
}

extension NamedDevice {
    /// How far a device's `lastSeen` may lag before admitting it writes again: stale-device
    /// cleanup counts in days, and a notify should not cost a write transaction of its own.
    static let seenGranularity: TimeInterval = 3_600

    /// Admitting this device decided from what the store holds, without a write: `.some(nil)` for
    /// a dead token (or a disabled device), `.some(device)` when the stored device is current;
    /// nil when admitting must write (a new device, a revival, a later registration, new keys, an old `lastSeen`).
    /// A device another route registered (`ownedElsewhere`) is taken as it is: a notify never rewrites it.
    func admittedWithoutWrite(_ device: DeviceRecord?, deadAt: Int64?, now: Date, ownedElsewhere: Bool = false) -> DeviceRecord?? {
        if var device, ownedElsewhere {
            device.registeredElsewhere = true
            return .some(device.disabledReason == nil ? device : nil)
        }
        if let deadAt { return registeredAt.milliseconds <= deadAt ? .some(nil) : nil }
        guard let device else { return nil }
        if device.disabledReason != nil { return .some(nil) }
        let current =
            device.updatedAt >= registeredAt && device.platform == token.platform && device.attributes == storedAttributes
            && now.timeIntervalSince(device.lastSeen) < Self.seenGranularity
        return current ? .some(device) : nil
    }
}

/// An accepted event with its rendered push and the devices it goes to.
public struct NewEvent: Sendable {
    public var id: String
    public var app: String
    public var template: String
    public var push: RenderedPush
    public var expiresAt: Date
    /// `DeviceRecord.rowID`s; one delivery each.
    public var deviceRowIDs: [Int64]
    /// The chain source's id for what produced it (a txid): the same one is never accepted twice.
    public var dedupeKey: String?
    /// The routed devices as the publisher read them, in `deviceRowIDs`' order, so a store need
    /// not read each again for its lane; empty when only row ids are known. A device deleted
    /// since still fails the delivery's foreign key.
    public var devices: [DeviceRecord] = []
    /// The HTTP request that created it (its `X-Request-ID`), named in its deliveries' log lines
    /// by whichever instance sends them; nil for the chain source's events.
    public var requestID: String?

    public init(id: String, app: String, template: String, push: RenderedPush, expiresAt: Date, deviceRowIDs: [Int64], dedupeKey: String? = nil) {
        self.id = id
        self.app = app
        self.template = template
        self.push = push
        self.expiresAt = expiresAt
        self.deviceRowIDs = deviceRowIDs
        self.dedupeKey = dedupeKey
    }

    /// An event for routed devices: one delivery each, in row order, a device named twice once.
    public init(id: String, app: String, template: String, push: RenderedPush, expiresAt: Date, devices: [DeviceRecord], dedupeKey: String? = nil) {
        var seen = Set<Int64>()
        let unique = devices.filter { seen.insert($0.rowID).inserted }.sorted { $0.rowID < $1.rowID }
        self.init(id: id, app: app, template: template, push: push, expiresAt: expiresAt, deviceRowIDs: unique.map(\.rowID), dedupeKey: dedupeKey)
        self.devices = unique
    }
}

/// Where a chain source got to; saved with the events it produced.
public struct ChainCheckpoint: Hashable, Sendable {
    public var source: String
    public var blockHash: String
    public var daaScore: UInt64

    public init(source: String, blockHash: String, daaScore: UInt64) {
        self.source = source
        self.blockHash = blockHash
        self.daaScore = daaScore
    }
}

/// A chain block a chain source passed, kept as a place to resume from should the node forget
/// the checkpoint (pruned, reorged out, or another node): one every few minutes, within the
/// maximum age.
public struct ChainAnchor: Hashable, Sendable {
    public var source: String
    public var blockHash: String
    public var daaScore: UInt64
    /// The block's time.
    public var time: Date

    public init(source: String, blockHash: String, daaScore: UInt64, time: Date) {
        (self.source, self.blockHash, self.daaScore, self.time) = (source, blockHash, daaScore, time)
    }
}

/// A delivery handed to a sender, leased until `leaseUntil`.
public struct ClaimedDelivery: Hashable, Sendable {
    public var id: Int64
    public var eventID: String
    public var device: DeviceRecord
    public var push: RenderedPush
    /// Kept across retries, so a delivery has one identity at APNs.
    public var apnsID: UUID
    /// Including this one.
    public var attempt: Int
    public var expiresAt: Date
    /// When its event was accepted (for the delivery-latency metric); nil where not known.
    public var acceptedAt: Date?
    /// The request that created its event (`NewEvent.requestID`).
    public var requestID: String?
    /// Its event's template (`kasia.payment`, `custom`, …), where known.
    public var template: String?

    public init(
        id: Int64, eventID: String, device: DeviceRecord, push: RenderedPush, apnsID: UUID, attempt: Int, expiresAt: Date,
        acceptedAt: Date? = nil, requestID: String? = nil, template: String? = nil
    ) {
        self.acceptedAt = acceptedAt
        self.requestID = requestID
        self.template = template
        self.id = id
        self.eventID = eventID
        self.device = device
        self.push = push
        self.apnsID = apnsID
        self.attempt = attempt
        self.expiresAt = expiresAt
    }
}

/// What became of a claimed delivery.
public enum DeliveryOutcome: Hashable, Sendable {
    case sent(id: Int64)
    case retry(id: Int64, at: Date, reason: String)
    /// The push service throttles this device token: this delivery and every other pending one of
    /// the device wait until at least `at`.
    case retryDevice(id: Int64, deviceRowID: Int64, at: Date, reason: String)
    case failed(id: Int64, reason: String)
    case expired(id: Int64)
    /// 410 with APNs's timestamp: delete the device unless it registered again after `since`.
    /// 400 BadDeviceToken (no timestamp): disable it for its environment and drop its pending deliveries.
    case tokenDead(id: Int64, deviceRowID: Int64, since: Date?, reason: String)
}

/// Delivery states.
public enum DeliveryState: String, Sendable, CaseIterable {
    case pending, sending, sent, failed, expired, dropped
}

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

/// The devices and what each watches: written by the registration routes, read by routing.
/// Every method is one transaction.
public protocol DeviceRegistry: Sendable {
    /// Creates or updates the device for each (app, token), replacing its watch set and reviving a
    /// disabled one; all in one transaction (bulk imports). Returns the records in order.
    func register(_ registrations: [Registration], now: Date) async throws -> [DeviceRecord]
    /// Replaces the watch set of a registered device; false when there is none.
    func updateWatchSet(app: String, token: String, watchSet: WatchSet, now: Date) async throws -> Bool
    /// Removes a device; false when there was none.
    func unregister(app: String, token: String) async throws -> Bool
    /// Removes every device of `app` with this app-chosen device id (a logout); returns how many.
    func unregister(app: String, deviceID: String) async throws -> Int
    /// A device and its watch set, marking it seen.
    func status(app: String, token: String, now: Date) async throws -> (DeviceRecord, WatchSet)?
    /// Enabled devices of `app` with `key` among their watch keys or own addresses, or with routes for it.
    func devices(app: String, watching key: String) async throws -> [DeviceRecord]
    /// `devices(app:watching:)` for several keys at once (a batch's events), by key.
    func devices(app: String, watchingEach keys: [String]) async throws -> [String: [DeviceRecord]]
    /// The watch sets of devices, by `DeviceRecord.rowID` (for routing rules that need them).
    func watchSets(rowIDs: [Int64]) async throws -> [Int64: WatchSet]
    /// Every enabled device of `app` (Claudiator's default target).
    func devices(app: String) async throws -> [DeviceRecord]
    /// Enabled devices of `app` by token.
    func devices(app: String, tokens: [String]) async throws -> [DeviceRecord]
    /// Enabled devices of `app` by their app-chosen `device_id`.
    func devices(app: String, deviceIDs: [String]) async throws -> [DeviceRecord]
    /// Removes devices not seen since `lastSeenBefore`; returns how many.
    func deleteStaleDevices(lastSeenBefore: Date) async throws -> Int
    /// How many devices `app` has (its `(app, token)` index counts them).
    func deviceCount(app: String) async throws -> Int
    /// The devices named by a request itself (a Matrix notify's pushkeys), in order: each is
    /// created when new, marked seen, and its `updatedAt` raised to `registeredAt` (so a 410 from
    /// before a later registration keeps it). Nil for a token a push service called dead at or
    /// after its `registeredAt` (`dead_tokens`), and for a disabled device; a token registered
    /// again after it died is revived. One transaction.
    func admit(_ devices: [NamedDevice], now: Date) async throws -> [DeviceRecord?]
}

/// Accepted events and their deliveries: the publisher commits into it, the outbox claims from
/// it and records what the push service said.
public protocol DeliveryQueue: Sendable {
    /// Commits events and their deliveries (and a chain checkpoint) together. Events whose
    /// dedupe key was seen before are skipped. Returns the deliveries created per event id.
    /// With `claim`, deliveries for the lanes it names are written already leased (up to each
    /// lane's count) and returned, so a waiting lane sends them without a claim transaction of its own.
    func enqueue(_ events: [NewEvent], checkpoint: ChainCheckpoint?, now: Date, claim: DirectClaim?) async throws -> EnqueueResult
    /// Leases up to `limit` of `app`'s due deliveries to `platform`'s devices (pending and due, or
    /// sending with an expired lease).
    func claimDue(app: String, platform: Platform, limit: Int, now: Date, lease: Duration) async throws -> [ClaimedDelivery]
    /// Applies outcomes of claimed deliveries.
    func complete(_ outcomes: [DeliveryOutcome], now: Date) async throws
    /// Marks pending deliveries past their expiration; returns how many.
    func expire(now: Date) async throws -> Int
}

extension DeviceRegistry {
    /// One lookup per key.
    public func devices(app: String, watchingEach keys: [String]) async throws -> [String: [DeviceRecord]] {
        var found: [String: [DeviceRecord]] = [:]
        for key in Set(keys) { found[key] = try await devices(app: app, watching: key) }
        return found
    }
}

extension DeliveryQueue {
    /// Commits events and their deliveries, all left pending for the lanes to claim.
    public func enqueue(_ events: [NewEvent], checkpoint: ChainCheckpoint?, now: Date) async throws -> [String: Int] {
        try await enqueue(events, checkpoint: checkpoint, now: now, claim: nil).created
    }
}

/// An outbox lane's identity: one app's deliveries to one platform's devices.
public struct LaneKey: Hashable, Sendable {
    public var app: String
    public var platform: Platform

    public init(app: String, platform: Platform) {
        self.app = app
        self.platform = platform
    }
}

/// Lanes that take deliveries straight from an enqueue (they wait for work): their deliveries are
/// written leased, saving the lane a claim transaction and a WAL sync per push.
public struct DirectClaim: Sendable {
    /// How many deliveries each lane takes at most.
    public var lanes: [LaneKey: Int]
    public var lease: Duration

    public init(lanes: [LaneKey: Int], lease: Duration) {
        self.lanes = lanes
        self.lease = lease
    }
}

/// What an enqueue committed.
public struct EnqueueResult: Sendable {
    /// Deliveries created, by event id (events skipped as duplicates are absent).
    public var created: [String: Int]
    /// Deliveries leased to the lanes a `DirectClaim` named, as `claimDue` would return them.
    public var claimed: [ClaimedDelivery]
    /// Lanes with deliveries left pending, which must claim them from the store.
    public var pending: Set<LaneKey>
    /// Apps every lane of which may have deliveries pending (a store that claims nothing at enqueue).
    public var pendingApps: Set<String>

    public init(created: [String: Int], claimed: [ClaimedDelivery] = [], pending: Set<LaneKey>, pendingApps: Set<String> = []) {
        self.created = created
        self.claimed = claimed
        self.pending = pending
        self.pendingApps = pendingApps
    }

    /// Every lane of the apps of `events`: what a store that claims nothing at enqueue reports.
    public static func allPending(created: [String: Int], events: [NewEvent]) -> EnqueueResult {
        EnqueueResult(created: created, pending: [], pendingApps: Set(events.filter { created[$0.id] != nil }.map(\.app)))
    }
}

/// Where a chain source got to (written by `DeliveryQueue.enqueue` with the events it produced).
public protocol ChainCheckpoints: Sendable {
    func checkpoint(source: String) async throws -> ChainCheckpoint?
    /// The source's anchors, newest first.
    func anchors(source: String) async throws -> [ChainAnchor]
    /// Keeps `anchor` and forgets the source's anchors older than `keepingAfter`.
    func addAnchor(_ anchor: ChainAnchor, keepingAfter: Date) async throws
}

/// One holder at a time of a named role across every instance on the database.
public protocol Leadership: Sendable {
    /// Runs `body` only while this process holds the named leadership, waiting (polling every
    /// `poll`) until it does: PostgreSQL takes a session advisory lock on one connection, which
    /// the server releases when the holder dies; SQLite (one process per file) runs `body` at once.
    func withLeadership(_ name: String, poll: Duration, _ body: @escaping @Sendable () async -> Void) async throws
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

/// What became of one event's deliveries, for `GET /v1/events/{id}` (never a token).
public struct EventStatus: Hashable, Sendable {
    public var id: String
    public var app: String
    public var template: String
    public var createdAt: Date
    public var expiresAt: Date
    /// Deliveries by state, and by state and last reason (a retry's, a failure's).
    public var deliveries: [DeliveryState: Int] = [:]
    public var reasons: [DeliveryState: [String: Int]] = [:]

    public init(id: String, app: String, template: String, createdAt: Date, expiresAt: Date) {
        self.id = id
        self.app = app
        self.template = template
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }

    /// Adds a `state, last_reason, count` row of the deliveries' grouping.
    mutating func add(state: String, reason: String?, count: Int) {
        guard let state = DeliveryState(rawValue: state) else { return }
        deliveries[state, default: 0] += count
        if let reason, !reason.isEmpty { reasons[state, default: [:]][reason, default: 0] += count }
    }
}

/// An app's outbox queue.
public struct AppQueue: Hashable, Sendable {
    /// Deliveries pending or being sent.
    public var depth: Int
    /// When the oldest of them was created.
    public var oldest: Date?

    public init(depth: Int, oldest: Date?) {
        self.depth = depth
        self.oldest = oldest
    }
}

/// Where instances share a push service's credentials (the APNs provider token per key, the
/// FCM access token per service account).

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

public protocol Store: DeviceRegistry, DeliveryQueue, ChainCheckpoints, Leadership, StoreStatistics, CredentialLedger, Retention {
    /// Brings the schema to the current version.
    func migrate() async throws
}

extension DeviceRegistry {
    /// Creates or updates the device for (app, token), replacing its watch set; revives a disabled one.
    public func register(_ registration: Registration, now: Date) async throws -> DeviceRecord {
        try await register([registration], now: now)[0]
    }
}

/// The database did not answer in time: the call did not get a connection, so nothing it would
/// have written is promised (the API answers 503 with `Retry-After`; a publisher retrying with the
/// same dedupe key gets one event either way).
public struct StoreUnavailable: Error, CustomStringConvertible, Sendable {
    /// Where the database is (never its password).
    public let address: String
    public let cause: String

    public init(address: String, cause: String) {
        (self.address, self.cause) = (address, cause)
    }

    public var description: String { "the database at \(address) is not answering: \(cause)" }
}
