import Foundation
import HeraldCore
import HeraldPushCore
import HeraldStore
import Logging
import ServiceLifecycle
import Synchronization

/// How the outbox claims, retries and pauses; shared by every app's lane.
public struct OutboxSettings: Sendable {
    /// When a failed delivery is tried again.
    public var retryPolicy = RetryPolicy()
    /// How long a claimed delivery belongs to this process; after a crash it returns after this.
    public var lease: Duration = .seconds(30)
    /// How long a lane with nothing due sleeps before it looks again (retries come due on their own).
    public var idleInterval: Duration = .milliseconds(200)
    /// How long an app's sends pause after its push service refuses freshly refreshed
    /// credentials; doubles on each further refusal up to the upper bound. One delivery probes
    /// when it ends.
    public var credentialsPause: ClosedRange<Duration> = .seconds(60) ... .seconds(1_200)
    /// How often unclaimed deliveries past their expiration are marked expired.
    public var expirySweepInterval: Duration = .seconds(10)
    /// Outcomes of small batches are recorded together, at most this late: at a few pushes at a
    /// time, one transaction (one WAL sync) for many outcomes instead of one each. A crash before
    /// they are recorded sends those pushes again after their lease; none is lost.
    public var outcomeDelay: Duration = .milliseconds(20)
    /// A lane records at once when it holds this many outcomes (a busy lane's batches are larger).
    public var outcomeBatch = 64

    public init() {}
}

/// The outbox: one lane per app and push service, each a service that claims that app's due
/// deliveries to that service's devices, sends them through its provider, and records the
/// outcomes. Publishing never waits on it; a crash leaves leased deliveries that come back after
/// the lease.
public struct Outbox: Sendable {
    /// Each app's lanes (one per provider), in configuration order.
    public let lanes: [OutboxLane]
    /// Marks unclaimed deliveries past their expiration.
    public let expirySweep: ExpirySweep
    private let lanesByApp: [String: [OutboxLane]]
    private let lanesByKey: [LaneKey: OutboxLane]
    /// How long a claimed delivery belongs to this process.
    public let lease: Duration

    /// - Parameter providers: each app's providers (one per platform it delivers to).
    public init(
        queue: any DeliveryQueue, providers: [(app: String, providers: [any PushProvider])], settings: OutboxSettings = OutboxSettings(),
        clock: any HeraldClock = SystemClock(), logger: Logger = Logger(label: "herald.outbox"), metrics: HeraldMetrics? = nil
    ) {
        var lanes: [OutboxLane] = []
        for (app, appProviders) in providers {
            // One provider per platform: a second for the same platform would claim the same rows.
            var seen = Set<Platform>()
            // A platform without a provider still gets a lane: its deliveries fail with a reason
            // instead of waiting forever.
            let all = appProviders + Platform.builtIn.map { MissingProvider(platform: $0) }
            for provider in all where seen.insert(provider.platform).inserted {
                lanes.append(OutboxLane(
                    app: app, queue: queue, provider: provider, settings: settings, clock: clock, logger: logger, metrics: metrics))
            }
        }
        self.lanes = lanes
        lanesByApp = Dictionary(grouping: lanes, by: \.app)
        lanesByKey = Dictionary(lanes.map { (LaneKey(app: $0.app, platform: $0.platform), $0) }) { first, _ in first }
        lease = settings.lease
        expirySweep = ExpirySweep(queue: queue, interval: settings.expirySweepInterval, clock: clock, logger: logger)
    }

    /// Tells `app`'s lane that new deliveries are waiting.
    public func notify(app: String) {
        for lane in lanesByApp[app] ?? [] { lane.notify() }
    }

    /// The lanes of `apps` that wait for work and take deliveries straight from a commit, or nil
    /// when none does.
    public func directClaim(apps: Set<String>) -> DirectClaim? {
        var lanes: [LaneKey: Int] = [:]
        for app in apps {
            for lane in lanesByApp[app] ?? [] {
                let count = lane.directClaimCapacity
                if count > 0 { lanes[LaneKey(app: app, platform: lane.platform)] = count }
            }
        }
        return lanes.isEmpty ? nil : DirectClaim(lanes: lanes, lease: lease)
    }

    /// After a commit: hands each lane the deliveries leased to it and tells the lanes with
    /// pending deliveries to claim them.
    public func enqueued(_ result: EnqueueResult, now: Date) {
        let leaseUntil = now.addingTimeInterval(lease.seconds)
        for (key, claimed) in Dictionary(grouping: result.claimed, by: { LaneKey(app: $0.device.app, platform: $0.device.platform) }) {
            lanesByKey[key]?.handOff(claimed, leaseUntil: leaseUntil)
        }
        for key in result.pending { lanesByKey[key]?.notify() }
        for app in result.pendingApps { notify(app: app) }
    }

    /// Every service of the outbox: the lanes, then the expiry sweep.
    public var services: [any Service] { lanes + [expirySweep] }

    /// Runs every lane until the task is cancelled or a graceful shutdown (tests and benchmarks
    /// that run no service group).
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            for service in services {
                group.addTask { try? await service.run() }
            }
        }
    }
}

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
    private let wakeup = Wakeup()
    private let stopping = Atomic<Bool>(false)
    /// Set by `notify`: the store has deliveries for this lane.
    private let storeHasWork = Atomic<Bool>(true)
    private let handoffs = Mutex(Handoffs())
    /// Attempts of flights that have come back, for the lane's loop to settle and record.
    private let landed = Mutex<[[Attempt]]>([])
    private let paused = Atomic<Bool>(false)

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
        logger: Logger = Logger(label: "herald.outbox"), metrics: HeraldMetrics? = nil
    ) {
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
        let outcomes = await provider.send(live.map { deliveries[$0] })
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

    /// What the store records for one provider outcome (a shrink is handled by `decide`).
    private func attempt(for delivery: ClaimedDelivery, outcome: PushOutcome, now: Date) -> Attempt {
        switch outcome {
        case .delivered:
            logger.debug("delivered", metadata: [
                "app": "\(app)", "platform": "\(platform.rawValue)", "event": "\(delivery.eventID)", "request_id": "\(origin(of: delivery))", "attempt": "\(delivery.attempt)",
            ])
            return Attempt(outcome: .sent(id: delivery.id))
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

/// Marks unclaimed deliveries past their expiration. Claimed ones past it are dropped at send
/// time, so this only keeps them from lingering and need not run before every claim.
public struct ExpirySweep: Service, Sendable {
    let queue: any DeliveryQueue
    let interval: Duration
    let clock: any HeraldClock
    let logger: Logger

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    if try await queue.expire(now: clock.now()) > 0 { logger.debug("expired deliveries dropped") }
                } catch {
                    if Task.isCancelled { return }
                    logger.error("outbox store error", metadata: ["error": "\(error)"])
                }
                try? await clock.sleep(for: interval)
            }
        }
    }
}

/// Outcomes a lane has not recorded yet, and when they must be.
struct UnrecordedOutcomes {
    private var outcomes: [DeliveryOutcome] = []
    /// When the oldest must be recorded.
    private(set) var due: Date?

    var count: Int { outcomes.count }
    var isEmpty: Bool { outcomes.isEmpty }

    mutating func add(_ new: [DeliveryOutcome], now: Date, delay: Duration) {
        guard !new.isEmpty else { return }
        if outcomes.isEmpty { due = now.addingTimeInterval(delay.seconds) }
        outcomes += new
    }

    mutating func take() -> [DeliveryOutcome] {
        defer { outcomes = []; due = nil }
        return outcomes
    }

    /// `timeout`, shortened so a wait ends when the outcomes are due.
    func timeout(_ timeout: Duration, now: Date) -> Duration {
        guard let due else { return timeout }
        return min(timeout, .seconds(max(0, due.timeIntervalSince(now))))
    }
}

/// A lane's pause: after refused credentials (doubling, with a probe at its end), or while the
/// service asked the app to wait. Owned by the lane's one loop.
struct LanePause {
    enum Permit: Equatable {
        /// Paused: look again after this many seconds.
        case wait(TimeInterval)
        /// The pause is over: send one delivery to see whether the service takes the credentials now.
        case probe
        case open
    }

    /// Refusals since the lane last delivered.
    private var refusals = 0
    private var until: Date?
    /// A wait the service asked for, after which the lane opens fully.
    private var holdUntil: Date?

    var isPaused: Bool { refusals > 0 }

    func permit(now: Date) -> Permit {
        if let holdUntil, holdUntil > now { return .wait(holdUntil.timeIntervalSince(now)) }
        guard isPaused else { return .open }
        if let until, until > now { return .wait(until.timeIntervalSince(now)) }
        return .probe
    }

    /// Counts a refusal and returns how long to pause: the lower bound, doubling, up to the upper.
    mutating func refused(within bounds: ClosedRange<Duration>, now: Date) -> Duration {
        refusals += 1
        let factor = Double(1 << min(refusals - 1, 20))
        let pause = Duration.seconds(min(bounds.upperBound.seconds, bounds.lowerBound.seconds * factor))
        until = now.addingTimeInterval(pause.seconds)
        return pause
    }

    /// Sends nothing before `date`.
    mutating func hold(until date: Date) {
        holdUntil = max(holdUntil ?? date, date)
    }
}

/// A signal a lane sleeps on: it wakes the waiter, and a signal with no waiter is kept for the
/// next wait.
final class Wakeup: Sendable {
    private struct State {
        var pending = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waits whose timeout came before they started waiting.
        var expired: Set<Int> = []
        /// Waits begun and not yet returned (a timer that fires later leaves nothing behind).
        var active: Set<Int> = []
    }
    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let id = s.waiters.keys.min() else {
                s.pending = true
                return nil
            }
            return s.waiters.removeValue(forKey: id)
        }
        waiter?.resume()
    }

    /// Returns on a signal, after `timeout` on `clock` (waking nobody else; nil: no timeout), or
    /// when the task is cancelled.
    func wait(timeout: Duration?, clock: any HeraldClock) async {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            s.active.insert(s.nextID)
            return s.nextID
        }
        // A timer rather than a sleeping child task: no task group and no tasks to start per wait.
        let timer = timeout.map { clock.timer(after: $0) { self.stopWaiting(id: id) } }
        await withTaskCancellationHandler {
            await wait(id: id)
        } onCancel: {
            self.stopWaiting(id: id)
        }
        timer?.cancel()
        state.withLock { s in
            s.expired.remove(id)
            s.active.remove(id)
        }
    }

    private func wait(id: Int) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.expired.remove(id) != nil { return true }
                if s.pending {
                    s.pending = false
                    return true
                }
                s.waiters[id] = c
                return false
            }
            if now { c.resume() }
        }
    }

    private func stopWaiting(id: Int) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let waiter = s.waiters.removeValue(forKey: id) { return waiter }
            // Not waiting yet, or already woken by a signal: a late start must not wait.
            if s.active.contains(id) { s.expired.insert(id) }
            return nil
        }
        waiter?.resume()
    }
}
