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

/// The outbox: claims due deliveries in batches, sends them, and records what APNs said.
/// Publishing never waits on it; a crash leaves leased deliveries that come back after the lease.
public struct Outbox: Sendable {
    public let store: any Store
    public let provider: any PushProvider
    public let retryPolicy: RetryPolicy
    /// Deliveries in flight at once.
    public let batchSize: Int
    public let lease: Duration
    public let idleInterval: Duration
    public let logger: Logger
    public let metrics: HeraldMetrics?
    private let wakeup = Wakeup()
    /// How often unclaimed deliveries past their expiration are marked expired.
    static let expirySweepInterval: TimeInterval = 10

    public init(
        store: any Store, provider: any PushProvider, retryPolicy: RetryPolicy = RetryPolicy(), batchSize: Int = 500,
        lease: Duration = .seconds(30), idleInterval: Duration = .milliseconds(200), logger: Logger = Logger(label: "herald.outbox"),
        metrics: HeraldMetrics? = nil
    ) {
        self.metrics = metrics
        self.store = store
        self.provider = provider
        self.retryPolicy = retryPolicy
        self.batchSize = batchSize
        self.lease = lease
        self.idleInterval = idleInterval
        self.logger = logger
    }

    /// Tells the outbox new deliveries are waiting.
    public func notify() { wakeup.signal() }

    /// Runs until the task is cancelled; the batch in flight finishes first.
    public func run() async {
        var nextExpirySweep = Date.distantPast
        while !Task.isCancelled {
            do {
                let now = Date()
                // Deliveries already past their expiration are dropped when claimed; the sweep only
                // keeps unclaimed ones from lingering, so it need not run before every claim.
                if now >= nextExpirySweep {
                    if try await store.expire(now: now) > 0 { logger.debug("expired deliveries dropped") }
                    nextExpirySweep = now.addingTimeInterval(Self.expirySweepInterval)
                }
                let claimed = try await store.claimDue(limit: batchSize, now: now, lease: lease)
                if claimed.isEmpty {
                    // Sleep until notified or the idle interval passes (retries come due on their own).
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask { await wakeup.wait() }
                        group.addTask {
                            try? await Task.sleep(for: idleInterval)
                            wakeup.signal()
                        }
                        await group.next()
                        group.cancelAll()
                    }
                    continue
                }
                let outcomes = await withTaskGroup(of: DeliveryOutcome.self) { group in
                    for delivery in claimed {
                        group.addTask { await outcome(for: delivery) }
                    }
                    var all: [DeliveryOutcome] = []
                    for await o in group { all.append(o) }
                    return all
                }
                try await store.complete(outcomes, now: Date())
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                logger.error("outbox store error", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: idleInterval)
            }
        }
    }

    /// One delivery: send it, and turn APNs's answer into what the store records.
    func outcome(for delivery: ClaimedDelivery) async -> DeliveryOutcome {
        let outcome = await decide(delivery)
        if let metrics {
            switch outcome {
            case .sent: metrics.deliveryAttempt(outcome: "sent", reason: "accepted")
            case .retry(_, _, let reason): metrics.deliveryAttempt(outcome: "retry", reason: reason)
            case .failed(_, let reason): metrics.deliveryAttempt(outcome: "failed", reason: reason)
            case .expired: metrics.deliveryAttempt(outcome: "expired", reason: "expired")
            case .tokenDead(_, _, _, let reason): metrics.deliveryAttempt(outcome: "token_dead", reason: reason)
            }
        }
        return outcome
    }

    private func decide(_ delivery: ClaimedDelivery) async -> DeliveryOutcome {
        if delivery.expiresAt <= Date() { return .expired(id: delivery.id) }
        let result = await provider.send(delivery)
        let reason: String = switch result {
        case .accepted: "accepted"
        case .rejected(_, let r, _, _): r.rawValue
        case .transportFailure(let f): f.description
        }
        switch result.action {
        case .done:
            return .sent(id: delivery.id)
        case .retry(let after, _):
            let delay = retryPolicy.delay(afterAttempt: delivery.attempt, retryAfter: after)
            return .retry(id: delivery.id, at: Date().addingTimeInterval(delay.seconds), reason: reason)
        case .tokenDead(let since):
            logger.info("APNs token dead", metadata: ["token": "\(APNsDeviceToken.redacted(delivery.device.token))", "reason": "\(reason)"])
            return .tokenDead(id: delivery.id, deviceRowID: delivery.device.rowID, since: since, reason: reason)
        case .refreshCredentials:
            // The client already refreshed and retried once; try again later, backing off.
            let delay = retryPolicy.delay(afterAttempt: delivery.attempt)
            logger.error("APNs refused the provider token", metadata: ["reason": "\(reason)"])
            metrics?.credentialsRefused()
            return .retry(id: delivery.id, at: Date().addingTimeInterval(delay.seconds), reason: reason)
        case .shrinkPayload, .fail:
            return .failed(id: delivery.id, reason: reason)
        }
    }
}

/// A signal one waiter can sleep on; a signal with no waiter is kept for the next wait.
final class Wakeup: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let w = s.waiter else {
                s.pending = true
                return nil
            }
            s.waiter = nil
            return w
        }
        waiter?.resume()
    }

    func wait() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.pending {
                    s.pending = false
                    return true
                }
                s.waiter = c
                return false
            }
            if now { c.resume() }
        }
    }
}
