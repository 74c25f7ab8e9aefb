import Foundation
import HeraldAPNs
import HeraldCore
import HeraldStore
import Logging
import NIOCore
import Synchronization

/// Delivers a claimed delivery to a push service (SPEC §1's "push provider" seam).
public protocol PushProvider: Sendable {
    func send(_ delivery: ClaimedDelivery) async -> APNsResult
}

/// APNs for one app: its client (key, connections) and its topic.
public struct APNsPushProvider: PushProvider {
    public let client: APNsClient
    public let topic: String

    public init(client: APNsClient, topic: String) {
        self.client = client
        self.topic = topic
    }

    public func send(_ delivery: ClaimedDelivery) async -> APNsResult {
        let expiration = Int(delivery.expiresAt.timeIntervalSince1970)
        let notification = APNsNotification(
            deviceToken: delivery.device.token, topic: delivery.push.pushType == .voip ? topic + ".voip" : topic,
            pushType: delivery.push.pushType, priority: delivery.push.priority, expiration: expiration,
            collapseID: delivery.push.collapseID, apnsID: delivery.apnsID, payload: ByteBuffer(bytes: delivery.push.payload))
        do {
            return try await client.send(notification)
        } catch {
            return .rejected(status: 400, reason: error.reason, timestamp: nil, retryAfter: nil)
        }
    }
}

/// One app's share of the outbox: its push provider and its own limit of deliveries in flight,
/// so one app's outage or slow APNs key cannot hold back another app's pushes.
public struct OutboxLane: Sendable {
    public var app: String
    public var provider: any PushProvider
    /// Deliveries of this app in flight at once (one claimed batch).
    public var maximumInFlight: Int

    public init(app: String, provider: any PushProvider, maximumInFlight: Int = 500) {
        self.app = app
        self.provider = provider
        self.maximumInFlight = maximumInFlight
    }
}

/// The outbox: one lane per app claims that app's due deliveries in batches, sends them, and
/// records what APNs said. Publishing never waits on it; a crash leaves leased deliveries that
/// come back after the lease.
public struct Outbox: Sendable {
    public let store: any Store
    public let lanes: [OutboxLane]
    public let retryPolicy: RetryPolicy
    public let lease: Duration
    public let idleInterval: Duration
    /// How long an app's sends pause after APNs refuses a freshly minted provider token (SPEC §2);
    /// doubles on each further refusal up to the upper bound. One delivery probes when it ends.
    public let credentialsPause: ClosedRange<Duration>
    public let logger: Logger
    public let metrics: HeraldMetrics?
    private let wakeups: [String: Wakeup]
    /// How often unclaimed deliveries past their expiration are marked expired.
    static let expirySweepInterval: TimeInterval = 10

    public init(
        store: any Store, lanes: [OutboxLane], retryPolicy: RetryPolicy = RetryPolicy(), lease: Duration = .seconds(30),
        idleInterval: Duration = .milliseconds(200), credentialsPause: ClosedRange<Duration> = .seconds(60) ... .seconds(1_200),
        logger: Logger = Logger(label: "herald.outbox"), metrics: HeraldMetrics? = nil
    ) {
        self.store = store
        self.lanes = lanes
        self.retryPolicy = retryPolicy
        self.lease = lease
        self.idleInterval = idleInterval
        self.credentialsPause = credentialsPause
        self.logger = logger
        self.metrics = metrics
        self.wakeups = Dictionary(lanes.map { ($0.app, Wakeup()) }, uniquingKeysWith: { first, _ in first })
    }

    /// One app's outbox.
    public init(
        store: any Store, app: String = "default", provider: any PushProvider, retryPolicy: RetryPolicy = RetryPolicy(),
        batchSize: Int = 500, lease: Duration = .seconds(30), idleInterval: Duration = .milliseconds(200),
        logger: Logger = Logger(label: "herald.outbox"), metrics: HeraldMetrics? = nil
    ) {
        self.init(
            store: store, lanes: [OutboxLane(app: app, provider: provider, maximumInFlight: batchSize)],
            retryPolicy: retryPolicy, lease: lease, idleInterval: idleInterval, logger: logger, metrics: metrics)
    }

    /// Tells the outbox new deliveries of `app` are waiting.
    public func notify(app: String) { wakeups[app]?.signal() }

    /// Runs every lane until the task is cancelled; each lane's batch in flight finishes first.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            for lane in lanes {
                group.addTask { await run(lane) }
            }
            group.addTask { await sweepExpired() }
        }
    }

    /// Marks unclaimed deliveries past their expiration. Claimed ones past it are dropped at send
    /// time, so this only keeps them from lingering and need not run before every claim.
    private func sweepExpired() async {
        while !Task.isCancelled {
            do {
                if try await store.expire(now: Date()) > 0 { logger.debug("expired deliveries dropped") }
            } catch {
                if Task.isCancelled { return }
                logger.error("outbox store error", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: .seconds(Self.expirySweepInterval))
        }
    }

    /// A lane: claim a batch, send it, record the outcomes, again; sleep when nothing is due.
    /// (Several workers per lane were measured: more, smaller claims, each a WAL sync, doubled
    /// the publish-to-APNs p99 at 1,000 events/s.)
    private func run(_ lane: OutboxLane) async {
        var pause = LanePause()
        let batch = max(1, lane.maximumInFlight)
        let wakeup = wakeups[lane.app]!
        while !Task.isCancelled {
            do {
                let limit: Int
                switch pause.permit(now: Date()) {
                case .wait(let seconds):
                    try await Task.sleep(for: .seconds(seconds))
                    continue
                case .probe:
                    limit = 1
                case .open:
                    limit = batch
                }
                let claimed = try await store.claimDue(app: lane.app, limit: limit, now: Date(), lease: lease)
                if claimed.isEmpty {
                    await sleep(on: wakeup)
                    continue
                }
                let attempts = await withTaskGroup(of: Attempt.self) { group in
                    for delivery in claimed {
                        group.addTask { await attempt(delivery, provider: lane.provider) }
                    }
                    var all: [Attempt] = []
                    all.reserveCapacity(claimed.count)
                    for await a in group { all.append(a) }
                    return all
                }
                var outcomes = attempts.map(\.outcome)
                if attempts.contains(where: \.credentialsRefused) {
                    let until = Date().addingTimeInterval(pause.refused(within: credentialsPause).seconds)
                    // Every refused delivery waits out the pause instead of its own back-off.
                    outcomes = zip(attempts, outcomes).map { a, o in
                        guard a.credentialsRefused, case .retry(let id, _, let reason) = o else { return o }
                        return .retry(id: id, at: until, reason: reason)
                    }
                    logger.critical(
                        "APNs refused a fresh provider token: pausing this app's sends",
                        metadata: ["app": "\(lane.app)", "seconds": "\(Int(until.timeIntervalSinceNow.rounded()))"])
                    metrics?.sendsPaused(app: lane.app, true)
                } else if pause.isPaused, attempts.contains(where: { if case .sent = $0.outcome { true } else { false } }) {
                    pause = LanePause()
                    logger.notice("APNs accepted the provider token again: sends resumed", metadata: ["app": "\(lane.app)"])
                    metrics?.sendsPaused(app: lane.app, false)
                }
                try await store.complete(outcomes, now: Date())
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                logger.error("outbox store error", metadata: ["app": "\(lane.app)", "error": "\(error)"])
                try? await Task.sleep(for: idleInterval)
            }
        }
    }

    /// Sleeps until notified or the idle interval passes (retries come due on their own).
    private func sleep(on wakeup: Wakeup) async {
        await wakeup.wait(timeout: idleInterval)
    }

    /// One delivery's attempt: what the store records, and whether APNs refused the credentials.
    struct Attempt: Sendable {
        var outcome: DeliveryOutcome
        var credentialsRefused = false
    }

    /// Sends one delivery and turns APNs's answer into what the store records.
    func attempt(_ delivery: ClaimedDelivery, provider: any PushProvider) async -> Attempt {
        let attempt = await decide(delivery, provider: provider, mayShrink: true)
        if let metrics {
            switch attempt.outcome {
            case .sent: metrics.deliveryAttempt(outcome: "sent", reason: "accepted")
            case .retry(_, _, let reason): metrics.deliveryAttempt(outcome: "retry", reason: reason)
            case .failed(_, let reason): metrics.deliveryAttempt(outcome: "failed", reason: reason)
            case .expired: metrics.deliveryAttempt(outcome: "expired", reason: "expired")
            case .tokenDead(_, _, _, let reason): metrics.deliveryAttempt(outcome: "token_dead", reason: reason)
            }
        }
        return attempt
    }

    private func decide(_ delivery: ClaimedDelivery, provider: any PushProvider, mayShrink: Bool) async -> Attempt {
        if delivery.expiresAt <= Date() { return Attempt(outcome: .expired(id: delivery.id)) }
        let result = await provider.send(delivery)
        let reason: String = switch result {
        case .accepted: "accepted"
        case .rejected(_, let r, _, _): r.rawValue
        case .transportFailure(let f): f.description
        }
        switch result.action {
        case .done:
            return Attempt(outcome: .sent(id: delivery.id))
        case .retry(let after, _):
            let delay = retryPolicy.delay(afterAttempt: delivery.attempt, retryAfter: after)
            return Attempt(outcome: .retry(id: delivery.id, at: Date().addingTimeInterval(delay.seconds), reason: reason))
        case .tokenDead(let since):
            logger.info("APNs token dead", metadata: ["token": "\(APNsDeviceToken.redacted(delivery.device.token))", "reason": "\(reason)"])
            return Attempt(outcome: .tokenDead(id: delivery.id, deviceRowID: delivery.device.rowID, since: since, reason: reason))
        case .refreshCredentials:
            // The client already minted a new token (if the 20-minute floor allowed) and retried once.
            metrics?.credentialsRefused()
            let delay = retryPolicy.delay(afterAttempt: delivery.attempt)
            return Attempt(
                outcome: .retry(id: delivery.id, at: Date().addingTimeInterval(delay.seconds), reason: reason),
                credentialsRefused: true)
        case .shrinkPayload:
            // SPEC §2: a template bug; send a smaller push once, else fail.
            guard mayShrink, let smaller = delivery.push.shrunk() else {
                return Attempt(outcome: .failed(id: delivery.id, reason: reason))
            }
            logger.warning("APNs said the payload is too large: retrying once with a smaller one", metadata: [
                "event": "\(delivery.eventID)", "bytes": "\(delivery.push.payload.count)", "smaller": "\(smaller.payload.count)",
            ])
            var retry = delivery
            retry.push = smaller
            return await decide(retry, provider: provider, mayShrink: false)
        case .fail:
            return Attempt(outcome: .failed(id: delivery.id, reason: reason))
        }
    }
}

/// A lane's pause after refused credentials: owned by the lane's one loop.
struct LanePause {
    enum Permit: Equatable {
        /// Paused: look again after this many seconds.
        case wait(TimeInterval)
        /// The pause is over: send one delivery to see whether APNs takes the credentials now.
        case probe
        case open
    }

    /// Refusals since the lane last delivered.
    private var refusals = 0
    private var until: Date?

    var isPaused: Bool { refusals > 0 }

    func permit(now: Date) -> Permit {
        guard isPaused else { return .open }
        if let until, until > now { return .wait(until.timeIntervalSince(now)) }
        return .probe
    }

    /// Counts a refusal and returns how long to pause: the lower bound, doubling, up to the upper.
    mutating func refused(within bounds: ClosedRange<Duration>) -> Duration {
        refusals += 1
        let factor = Double(1 << min(refusals - 1, 20))
        let pause = Duration.seconds(min(bounds.upperBound.seconds, bounds.lowerBound.seconds * factor))
        until = Date().addingTimeInterval(pause.seconds)
        return pause
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

    /// Returns on a signal, or after `timeout` (waking nobody else).
    func wait(timeout: Duration) async {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.wait(id: id) }
            group.addTask {
                // Ends the wait on timeout, and on cancellation (a waiter already woken is recorded
                // as expired, and forgotten below).
                try? await Task.sleep(for: timeout)
                self.stopWaiting(id: id)
            }
            await group.next()
            group.cancelAll()
        }
        _ = state.withLock { $0.expired.remove(id) }
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
            s.expired.insert(id)
            return nil
        }
        waiter?.resume()
    }
}
