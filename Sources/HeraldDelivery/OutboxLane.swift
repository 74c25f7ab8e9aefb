public import Foundation
public import HeraldCore
public import HeraldPushCore
public import HeraldStore
public import Logging
public import ServiceLifecycle
import Synchronization

/// One app's share of the outbox for one push service, so one app's outage or slow push service
/// (or its refused FCM credentials) cannot hold back another app's pushes, nor the same app's
/// pushes through another service: its own claims, its own limit in flight (its batches out at once),
/// its own pause. A service: on graceful shutdown it stops claiming, lets its flights out come
/// back and records their outcomes before it returns.
public final class OutboxLane: Service, Sendable {
    public let app: String
    /// The devices this lane delivers to: its provider's.
    public let platform: Platform
    /// Deliveries of this lane in flight at once.
    public let maximumInFlight: Int
    let queue: any DeliveryQueue
    let provider: any PushProvider
    let settings: OutboxSettings
    let clock: any HeraldClock
    let logger: Logger
    let metrics: HeraldMetrics?
    /// Where each device's recent dismissals are read, to ride along in its sealed alerts.
    let dismissals: (any DismissalLedger)?
    private let wakeup = Wakeup()
    private let stopping = Atomic<Bool>(false)
    /// Set by `notify`: the store has deliveries for this lane.
    private let storeHasWork = Atomic<Bool>(true)
    private let handoffs = Mutex(Handoffs())
    /// Attempts of flights that have come back, for the lane's loop to settle and record.
    private let landed = Mutex<[[Attempt]]>([])
    private let paused = Atomic<Bool>(false)
    /// Deliveries sent and not back yet (the loop's own count, for `room`).
    private let sending = Atomic<Int>(0)

    /// The push service refused the app's credentials: the lane sends nothing but a probe now
    /// and then until it takes them again (`/readyz` and `herald_app_sends_paused` show it).
    public var isPaused: Bool { paused.load(ordering: .relaxed) }

    private func setPaused(_ value: Bool) {
        paused.store(value, ordering: .relaxed)
        metrics?.sendsPaused(app: app, platform: platform, value)
    }

    /// Deliveries leased to the lane by commits, and whether it takes more.
    private struct Handoffs {
        /// The lane is open (not paused) and takes deliveries from commits, up to its limit in flight.
        var accepting = false
        var deliveries: [(delivery: ClaimedDelivery, leaseUntil: Date)] = []
    }

    public init(
        app: String, queue: any DeliveryQueue, provider: any PushProvider, maximumInFlight: Int = 500,
        settings: OutboxSettings = OutboxSettings(), clock: any HeraldClock = SystemClock(),
        logger: Logger = Logger(label: "herald.outbox"), metrics: HeraldMetrics? = nil, dismissals: (any DismissalLedger)? = nil
    ) {
        self.dismissals = dismissals
        self.app = app
        self.queue = queue
        self.platform = provider.platform
        self.provider = provider
        self.maximumInFlight = max(1, maximumInFlight)
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.metrics = metrics
    }

    /// New deliveries are waiting in the store: look at once.
    public func notify() {
        storeHasWork.store(true, ordering: .relaxed)
        wakeup.signal()
    }

    /// How many deliveries the lane takes straight from a commit now: while it is open, what its
    /// handed-off queue lacks of its limit in flight, so a busy lane needs no claim transaction
    /// for them; paused, none (they wait in the store).
    public var directClaimCapacity: Int {
        handoffs.withLock { $0.accepting ? max(0, maximumInFlight - $0.deliveries.count) : 0 }
    }

    /// How many more deliveries the lane could have out now: its limit in flight less those out
    /// and those handed off and waiting. A fan-out expands no faster than its lanes send.
    public var room: Int {
        max(0, maximumInFlight - sending.load(ordering: .relaxed) - handoffs.withLock { $0.deliveries.count })
    }

    /// Deliveries a commit leased to this lane until `leaseUntil`: sent next, without a claim.
    public func handOff(_ claimed: [ClaimedDelivery], leaseUntil: Date) {
        guard !claimed.isEmpty else { return }
        handoffs.withLock { h in
            h.deliveries += claimed.map { ($0, leaseUntil) }
        }
        wakeup.signal()
    }

    /// Takes up to `limit` handed-off deliveries whose lease still runs (one past its lease is
    /// left to the store, which hands it out again).
    private func takeHandoffs(limit: Int, now: Date) -> [ClaimedDelivery] {
        handoffs.withLock { h in
            let taken = h.deliveries.prefix(limit)
            h.deliveries.removeFirst(taken.count)
            return taken.filter { $0.leaseUntil > now }.map(\.delivery)
        }
    }

    private func setAccepting(_ accepting: Bool) {
        handoffs.withLock { $0.accepting = accepting }
    }

    /// Claims, sends and records until a graceful shutdown or cancellation.
    /// (Several workers per lane were measured: more, smaller claims, each a WAL sync, doubled the
    /// publish-to-APNs p99 at 1,000 events/s.)
    public func run() async throws {
        await withGracefulShutdownHandler {
            await loop()
        } onGracefulShutdown: {
            self.stopping.store(true, ordering: .relaxed)
            self.wakeup.signal()
        }
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) || Task.isCancelled }

    /// A graceful shutdown reached the lane: it claims nothing more.
    public var isShuttingDown: Bool { stopping.load(ordering: .relaxed) }

    private func loop() async {
        // The gauge exists from the start, at 0, so an alert on it has a series to watch.
        setPaused(false)
        var pause = LanePause()
        // When the lane last claimed from the store: it claims again when told the store has
        // work, when its last claim was full, and at least every idle interval (retries come due).
        var lastClaim: Date?
        var claimAgain = true
        var outcomes = UnrecordedOutcomes()
        // Deliveries sent and not yet back. Each claimed batch is a flight of its own, so one slow
        // destination (a Web Push origin that never answers) holds only its own flight: the lane
        // goes on claiming and sending up to its limit in flight.
        var inFlight = 0
        /// Flights that came back: their effect on the lane, then their outcomes; true when they
        /// must be recorded before the next claim.
        func land() -> Bool {
            var recordNow = false
            for attempts in landed.withLock({ l in defer { l = [] }; return l }) {
                inFlight -= attempts.count
                sending.subtract(attempts.count, ordering: .relaxed)
                let settled = settle(attempts, pause: &pause)
                outcomes.add(settled, now: clock.now(), delay: settings.outcomeDelay)
                // Only deliveries that went out wait: a retry or a dead token changes what the
                // next claim may take (the device's other pushes, the device itself).
                let onlySent = settled.allSatisfy { if case .sent = $0 { true } else { false } }
                if !onlySent || outcomes.count >= settings.outcomeBatch || settings.outcomeDelay <= .zero { recordNow = true }
            }
            return recordNow
        }
        /// Waits for a signal (new work, a flight back) or `timeout`. While flights are out and no
        /// outcome waits to be recorded, only a signal: a flight always comes back, within its
        /// send's deadline, and wakes the lane (retries that come due meanwhile wait for it).
        func idle(_ timeout: Duration) async {
            await wakeup.wait(timeout: inFlight > 0 && outcomes.isEmpty ? nil : outcomes.timeout(timeout, now: clock.now()), clock: clock)
        }
        // Stopping ends the loop; the group then waits for the flights out, which are recorded below.
        await withDiscardingTaskGroup { flights in
            while !isStopping {
                do {
                    if land() { try await record(&outcomes) }
                    if let due = outcomes.due, due <= clock.now() { try await record(&outcomes) }
                    let open: Bool
                    switch pause.permit(now: clock.now()) {
                    case .wait(let seconds):
                        setAccepting(false)
                        await wakeup.wait(timeout: outcomes.timeout(.seconds(seconds), now: clock.now()), clock: clock)
                        continue
                    case .probe: open = false
                    case .open: open = true
                    }
                    // Only an open lane takes deliveries straight from commits; a probe goes alone.
                    setAccepting(open)
                    let limit = open ? maximumInFlight - inFlight : (inFlight == 0 ? 1 : 0)
                    if limit <= 0 {
                        await idle(settings.idleInterval)
                        continue
                    }
                    let now = clock.now()
                    var claimed = takeHandoffs(limit: limit, now: now)
                    let idleOver = lastClaim.map { now.timeIntervalSince($0) >= settings.idleInterval.seconds } ?? true
                    // Handed-off work first; the store is claimed from when told, after a full claim,
                    // and at least every idle interval even while handoffs keep coming (retries come due).
                    if claimed.count < limit {
                        let told = claimed.isEmpty ? storeHasWork.exchange(false, ordering: .relaxed) : false
                        if told || (claimed.isEmpty && claimAgain) || idleOver {
                            let room = limit - claimed.count
                            let fromStore = try await queue.claimDue(app: app, platform: platform, limit: room, now: now, lease: settings.lease)
                            claimed += fromStore
                            lastClaim = now
                            claimAgain = fromStore.count == room
                        }
                    }
                    if claimed.isEmpty {
                        await idle(settings.idleInterval)
                        continue
                    }
                    // The batch goes to the provider whole, in a flight of its own: the provider
                    // sends its deliveries side by side.
                    inFlight += claimed.count
                    sending.add(claimed.count, ordering: .relaxed)
                    flights.addTask {
                        let attempts = await self.attempts(claimed)
                        self.landed.withLock { $0.append(attempts) }
                        self.wakeup.signal()
                    }
                } catch {
                    if isStopping { break }
                    logger.error("outbox store error", metadata: ["app": "\(app)", "error": "\(error)"])
                    try? await clock.sleep(for: settings.idleInterval)
                }
            }
        }
        _ = land()
        if !outcomes.isEmpty {
            do { try await record(&outcomes) } catch {
                logger.error("outbox store error: outcomes not recorded, those pushes go again after their lease", metadata: [
                    "app": "\(app)", "count": "\(outcomes.count)", "error": "\(error)",
                ])
            }
        }
        await releaseHandoffs()
    }

    /// Records the lane's outcomes in one transaction; they are dropped from memory either way
    /// (unrecorded, their deliveries come back after the lease).
    private func record(_ outcomes: inout UnrecordedOutcomes) async throws {
        try await complete(outcomes.take())
    }

    /// Records outcomes in a task of its own: the sends are done, so their outcomes are recorded
    /// even when shutdown has begun cancelling the lane (a cancelled task's database call may be refused).
    private func complete(_ outcomes: [DeliveryOutcome]) async throws {
        try await Task { try await self.queue.complete(outcomes, now: self.clock.now()) }.value
    }

    /// At shutdown: deliveries handed off but not sent go back to the store, due now, instead of
    /// waiting out their lease.
    private func releaseHandoffs() async {
        setAccepting(false)
        let left = handoffs.withLock { h in
            defer { h.deliveries = [] }
            return h.deliveries.map(\.delivery)
        }
        guard !left.isEmpty else { return }
        let now = clock.now()
        do {
            try await complete(left.map { .retry(id: $0.id, at: now, reason: "shutdown") })
        } catch {
            logger.warning("handed-off deliveries wait out their lease", metadata: ["app": "\(app)", "count": "\(left.count)", "error": "\(error)"])
        }
    }

    /// Applies a batch's effect on the lane (a credentials refusal pauses it; a delivery after a
    /// pause reopens it; a throttled key holds it) and returns what the store records.
    private func settle(_ attempts: [Attempt], pause: inout LanePause) -> [DeliveryOutcome] {
        let now = clock.now()
        if let refused = attempts.first(where: \.credentialsRefused) {
            let until = now.addingTimeInterval(pause.refused(within: settings.credentialsPause, now: now).seconds)
            let reason: String = if case .retry(_, _, let reason) = refused.outcome { reason } else { "refused" }
            logger.critical(
                "the push service refused freshly refreshed credentials: pausing this app's sends to it",
                metadata: [
                    "app": "\(app)", "platform": "\(platform.rawValue)", "seconds": "\(Int(until.timeIntervalSince(now).rounded()))",
                    "reason": "\(reason)",
                ])
            setPaused(true)
            // Every refused delivery waits out the pause instead of its own back-off.
            return attempts.map { a in
                guard a.credentialsRefused, case .retry(let id, _, let reason) = a.outcome else { return a.outcome }
                return .retry(id: id, at: until, reason: reason)
            }
        }
        if pause.isPaused, attempts.contains(where: { if case .sent = $0.outcome { true } else { false } }) {
            pause = LanePause()
            logger.notice(
                "the push service accepted the app's credentials again: sends resumed", metadata: ["app": "\(app)", "platform": "\(platform.rawValue)"])
            setPaused(false)
        }
        if let hold = attempts.compactMap(\.holdLaneUntil).max() { pause.hold(until: hold) }
        return attempts.map(\.outcome)
    }

    /// One delivery's attempt: what the store records, and what it means for the lane.
    struct Attempt: Sendable {
        var outcome: DeliveryOutcome
        /// The service refused the app's credentials even after a refresh.
        var credentialsRefused = false
        /// The service asked the whole app (or itself) to wait until then.
        var holdLaneUntil: Date?
    }

    /// Sends a batch and turns the provider's outcomes into what the store records, in order.
    func attempts(_ deliveries: [ClaimedDelivery]) async -> [Attempt] {
        let attempts = await decide(deliveries, mayShrink: true)
        if let metrics {
            for attempt in attempts {
                switch attempt.outcome {
                case .sent: metrics.deliveryAttempt(outcome: "sent", reason: "accepted")
                case .retry(_, _, let reason), .retryDevice(_, _, _, let reason): metrics.deliveryAttempt(outcome: "retry", reason: reason)
                case .failed(_, let reason): metrics.deliveryAttempt(outcome: "failed", reason: reason)
                case .expired: metrics.deliveryAttempt(outcome: "expired", reason: "expired")
                case .tokenDead(_, _, _, let reason): metrics.deliveryAttempt(outcome: "token_dead", reason: reason)
                }
            }
        }
        return attempts
    }

    private func decide(_ deliveries: [ClaimedDelivery], mayShrink: Bool) async -> [Attempt] {
        var attempts = [Attempt?](repeating: nil, count: deliveries.count)
        let start = clock.now()
        let live = deliveries.indices.filter { deliveries[$0].expiresAt > start }
        for index in deliveries.indices where deliveries[index].expiresAt <= start {
            attempts[index] = Attempt(outcome: .expired(id: deliveries[index].id))
        }
        metrics?.inFlight(live.count)
        let outcomes = await provider.send(await withRideAlong(live.map { deliveries[$0] }, now: start))
        let now = clock.now()
        if let metrics, !live.isEmpty {
            metrics.inFlight(-live.count)
            metrics.providerRequests(platform: platform, count: live.count, duration: .seconds(max(0, now.timeIntervalSince(start))))
            for (index, outcome) in zip(live, outcomes) {
                guard case .delivered = outcome, let accepted = deliveries[index].acceptedAt else { continue }
                metrics.delivered(platform: platform, latency: .seconds(max(0, now.timeIntervalSince(accepted))))
            }
        }
        // Pushes the service found too large go again once, smaller, together.
        var smaller: [(index: Int, delivery: ClaimedDelivery)] = []
        for (index, outcome) in zip(live, outcomes) {
            let delivery = deliveries[index]
            if case .shrinkPayload(let reason) = outcome {
                guard mayShrink, let push = delivery.push.shrunk() else {
                    attempts[index] = failed(delivery, reason: reason)
                    continue
                }
                logger.warning("the push service said the payload is too large: retrying once with a smaller one", metadata: [
                    "app": "\(app)", "event": "\(delivery.eventID)", "bytes": "\(delivery.push.payload.count)", "smaller": "\(push.payload.count)",
                ])
                var retry = delivery
                retry.push = push
                smaller.append((index, retry))
                continue
            }
            attempts[index] = attempt(for: delivery, outcome: outcome, now: now)
        }
        if !smaller.isEmpty {
            for (entry, attempt) in zip(smaller, await decide(smaller.map(\.delivery), mayShrink: false)) { attempts[entry.index] = attempt }
        }
        return attempts.map { $0! }
    }

    /// The batch with each sealed alert's recent dismissals (SPEC §15: at most 32, at most a day
    /// old), read in one query for the batch; a batch with none sends as it is. A failed read
    /// sends without them: the background dismissals went out on their own.
    private func withRideAlong(_ deliveries: [ClaimedDelivery], now: Date) async -> [ClaimedDelivery] {
        guard let dismissals else { return deliveries }
        let sealedAlerts = deliveries.indices.filter {
            deliveries[$0].push.pushType == .alert && deliveries[$0].device.attributes.contains(DevicePushKeys.p256dhAttribute)
        }
        guard !sealedAlerts.isEmpty else { return deliveries }
        let found: [Int64: [PendingDismissal]]
        do {
            found = try await dismissals.recentDismissals(
                deviceRowIDs: sealedAlerts.map { deliveries[$0].device.rowID }, since: now.addingTimeInterval(-Self.rideAlongAge),
                limit: Self.rideAlongLimit)
        } catch {
            logger.warning("could not read dismissals to ride along", metadata: ["app": "\(app)", "error": "\(error)"])
            return deliveries
        }
        guard !found.isEmpty else { return deliveries }
        var out = deliveries
        for index in sealedAlerts { out[index].rideAlong = found[out[index].device.rowID] ?? [] }
        return out
    }

    /// A sealed alert carries at most this many dismissals, each at most a day old.
    static let rideAlongLimit = 32
    static let rideAlongAge: TimeInterval = 86_400

    /// What the store records for one provider outcome (a shrink is handled by `decide`).
    private func attempt(for delivery: ClaimedDelivery, outcome: PushOutcome, now: Date) -> Attempt {
        switch outcome {
        case .delivered:
            logger.debug("delivered", metadata: [
                "app": "\(app)", "platform": "\(platform.rawValue)", "event": "\(delivery.eventID)", "request_id": "\(origin(of: delivery))", "attempt": "\(delivery.attempt)",
            ])
            return Attempt(outcome: .sent(id: delivery.id, fanout: delivery.fanout ? delivery.eventID : nil))
        case .retry(let after, let scope, let reason):
            let at = now.addingTimeInterval(settings.retryPolicy.delay(afterAttempt: delivery.attempt, retryAfter: after).seconds)
            logger.debug("delivery retried", metadata: [
                "app": "\(app)", "platform": "\(platform.rawValue)", "event": "\(delivery.eventID)", "request_id": "\(origin(of: delivery))", "attempt": "\(delivery.attempt)",
                "reason": "\(reason)", "seconds": "\(Int(at.timeIntervalSince(now).rounded()))",
            ])
            switch scope {
            case .token:
                return Attempt(outcome: .retryDevice(id: delivery.id, deviceRowID: delivery.device.rowID, at: at, reason: reason))
            case .credentials:
                return Attempt(outcome: .retry(id: delivery.id, at: at, reason: reason), holdLaneUntil: at)
            case .destination:
                return Attempt(outcome: .retry(id: delivery.id, at: at, reason: reason))
            case .service:
                // A Retry-After from the service itself holds the whole lane; without one, only this push backs off.
                let hold = after.map { now.addingTimeInterval($0.seconds) }
                return Attempt(outcome: .retry(id: delivery.id, at: at, reason: reason), holdLaneUntil: hold)
            }
        case .tokenDead(let since, let reason):
            logger.info("token dead", metadata: [
                "app": "\(app)", "token": "\(DeviceToken.redacted(delivery.device.token))", "reason": "\(reason)", "event": "\(delivery.eventID)",
                "request_id": "\(origin(of: delivery))",
            ])
            return Attempt(outcome: .tokenDead(id: delivery.id, deviceRowID: delivery.device.rowID, since: since, reason: reason))
        case .refreshCredentials(let reason):
            // The provider already refreshed its credentials (where its floor allowed) and retried once.
            metrics?.credentialsRefused(platform: platform)
            let delay = settings.retryPolicy.delay(afterAttempt: delivery.attempt)
            return Attempt(outcome: .retry(id: delivery.id, at: now.addingTimeInterval(delay.seconds), reason: reason), credentialsRefused: true)
        case .shrinkPayload(let reason), .failed(let reason):
            return failed(delivery, reason: reason)
        }
    }

    /// The request that created a delivery's event, for its log lines ("-": the chain source's).
    private func origin(of delivery: ClaimedDelivery) -> String {
        delivery.requestID ?? "-"
    }

    /// A delivery that will not be tried again: one log line, never the full token.
    private func failed(_ delivery: ClaimedDelivery, reason: String) -> Attempt {
        logger.warning("delivery failed", metadata: [
            "app": "\(app)", "token": "\(DeviceToken.redacted(delivery.device.token))", "reason": "\(reason)", "event": "\(delivery.eventID)",
            "request_id": "\(origin(of: delivery))",
        ])
        return Attempt(outcome: .failed(id: delivery.id, reason: reason))
    }
}
