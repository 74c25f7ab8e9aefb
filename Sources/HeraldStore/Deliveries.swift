public import Foundation
public import HeraldCore
public import HeraldPushCore

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
    /// since gets no delivery (the commit skips it).
    public var devices: [DeviceRecord] = []
    /// The HTTP request that created it (its `X-Request-ID`), named in its deliveries' log lines
    /// by whichever instance sends them; nil for the chain source's events.
    public var requestID: String?
    /// A large audience: the event commits with a fan-out job over this route instead of a
    /// delivery per device (`deviceRowIDs` is then empty), and the expander makes its deliveries
    /// a page at a time.
    public var fanout: FanoutRoute?
    /// Its deliveries coalesce per device on this key (its window), latest wins.
    public var coalescing: Coalescing?

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

/// A delivery handed to a sender, leased until `leaseUntil`.
public struct ClaimedDelivery: Hashable, Sendable {
    @usableFromInline
    struct Fields: Hashable, Sendable {
        @usableFromInline var id: Int64
        @usableFromInline var eventID: String
        @usableFromInline var device: DeviceRecord
        @usableFromInline var push: RenderedPush
        @usableFromInline var apnsID: UUID
        @usableFromInline var attempt: Int
        @usableFromInline var expiresAt: Date
        @usableFromInline var acceptedAt: Date?
        @usableFromInline var requestID: String?
        @usableFromInline var template: String?
        @usableFromInline var rideAlong: [PendingDismissal] = []
        @usableFromInline var fanout = false
    }

    /// One reference: a delivery is copied many times between its commit and its outcome.
    @usableFromInline var shared: SharedFields<Fields>

    @inlinable public var id: Int64 {
        get { shared.fields.id }
        _modify { yield &shared.fields.id }
    }
    @inlinable public var eventID: String {
        get { shared.fields.eventID }
        _modify { yield &shared.fields.eventID }
    }
    @inlinable public var device: DeviceRecord {
        get { shared.fields.device }
        _modify { yield &shared.fields.device }
    }
    @inlinable public var push: RenderedPush {
        get { shared.fields.push }
        _modify { yield &shared.fields.push }
    }
    /// Kept across retries, so a delivery has one identity at APNs.
    @inlinable public var apnsID: UUID {
        get { shared.fields.apnsID }
        _modify { yield &shared.fields.apnsID }
    }
    /// Including this one.
    @inlinable public var attempt: Int {
        get { shared.fields.attempt }
        _modify { yield &shared.fields.attempt }
    }
    @inlinable public var expiresAt: Date {
        get { shared.fields.expiresAt }
        _modify { yield &shared.fields.expiresAt }
    }
    /// When its event was accepted (for the delivery-latency metric); nil where not known.
    @inlinable public var acceptedAt: Date? {
        get { shared.fields.acceptedAt }
        _modify { yield &shared.fields.acceptedAt }
    }
    /// The request that created its event (`NewEvent.requestID`).
    @inlinable public var requestID: String? {
        get { shared.fields.requestID }
        _modify { yield &shared.fields.requestID }
    }
    /// Its event's template (`kasia.payment`, `custom`, …), where known.
    @inlinable public var template: String? {
        get { shared.fields.template }
        _modify { yield &shared.fields.template }
    }
    /// The device's recent dismissals, which ride along inside its push when it is a sealed
    /// alert (the lane reads them before sending).
    @inlinable public var rideAlong: [PendingDismissal] {
        get { shared.fields.rideAlong }
        _modify { yield &shared.fields.rideAlong }
    }
    /// Its event went out as a fan-out job: once sent, its row goes and the job counts it.
    @inlinable public var fanout: Bool {
        get { shared.fields.fanout }
        _modify { yield &shared.fields.fanout }
    }

    public init(
        id: Int64, eventID: String, device: DeviceRecord, push: RenderedPush, apnsID: UUID, attempt: Int, expiresAt: Date,
        acceptedAt: Date? = nil, requestID: String? = nil, template: String? = nil
    ) {
        shared = SharedFields(Fields(
            id: id, eventID: eventID, device: device, push: push, apnsID: apnsID, attempt: attempt, expiresAt: expiresAt,
            acceptedAt: acceptedAt, requestID: requestID, template: template))
    }
}

/// What became of a claimed delivery.
public enum DeliveryOutcome: Hashable, Sendable {
    /// `fanout`: the event id of the fan-out job it belongs to, which counts it in place of its row.
    case sent(id: Int64, fanout: String? = nil)
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
    /// Its fan-out job, when it went to a large audience.
    public var fanout: FanoutProgress?

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
