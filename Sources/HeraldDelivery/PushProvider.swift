public import Foundation
import HeraldCore
public import HeraldPushCore
public import HeraldStore

/// What a push service made of one delivery, in terms every service shares. Each provider maps
/// its own answers onto these in one place; the outbox acts on them without knowing the service.
public enum PushOutcome: Sendable, Hashable {
    /// The service accepted the push.
    case delivered
    /// The token will never work again. `since` is the service's own timestamp of when it
    /// stopped (a registration after it keeps the device); nil disables the device now.
    case tokenDead(since: Date?, reason: String)
    /// Try again later: not before `after` when the service said so, and holding back what
    /// `scope` names.
    case retry(after: Duration?, scope: RetryScope, reason: String)
    /// The service refused the app's credentials even after the provider refreshed them: the
    /// app's lane pauses and an operator must look.
    case refreshCredentials(reason: String)
    /// The push is too large for the service: send a smaller one once.
    case shrinkPayload(reason: String)
    /// The request is wrong and will stay wrong: do not retry.
    case failed(reason: String)

    /// What a retry holds back.
    public enum RetryScope: Sendable, Hashable {
        /// This device token (the service throttles it): its other pending pushes wait too.
        case token
        /// This app's credentials (a key minted too often): the app's lane waits.
        case credentials
        /// The service or the connection (5xx, reset, timeout): this push retries with back-off.
        case service
        /// One of the many hosts a provider sends to (a Web Push service): only this push waits;
        /// the provider holds that host's other pushes back itself, and the lane keeps going.
        case destination
    }

    /// The service's reason, for logs, metrics and the store ("accepted" when delivered).
    public var reason: String {
        switch self {
        case .delivered: "accepted"
        case .tokenDead(_, let reason), .retry(_, _, let reason), .refreshCredentials(let reason), .shrinkPayload(let reason),
            .failed(let reason):
            reason
        }
    }
}

/// Delivers claimed deliveries to one push service for one app. Providers never throw: every
/// failure is an outcome.
public protocol PushProvider: Sendable {
    /// The devices this provider delivers to.
    var platform: Platform { get }
    /// Sends one delivery and says what the service made of it.
    func send(_ delivery: ClaimedDelivery) async -> PushOutcome
    /// Sends a lane's batch and says what the service made of each, in their order. By default
    /// each goes through `send(_:)` side by side; a provider whose per-message work batches well
    /// (one hand-over to the connection for many streams) does better.
    func send(_ deliveries: [ClaimedDelivery]) async -> [PushOutcome]
    /// Closes connections; the provider sends nothing afterwards.
    func shutdown() async
    /// Its open connections and credential refreshes, for `/metrics` (zero by default).
    var stats: ProviderStats { get }
}

extension PushProvider {
    public func send(_ deliveries: [ClaimedDelivery]) async -> [PushOutcome] {
        guard deliveries.count > 1 else { return deliveries.isEmpty ? [] : [await send(deliveries[0])] }
        return await withTaskGroup(of: (Int, PushOutcome).self) { group in
            for (index, delivery) in deliveries.enumerated() { group.addTask { (index, await self.send(delivery)) } }
            var outcomes = [PushOutcome?](repeating: nil, count: deliveries.count)
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes.map { $0! }
        }
    }

    public func shutdown() async {}

    public var stats: ProviderStats { ProviderStats() }
}

/// Stands in for a platform an app has no push service for: every delivery fails, named.
struct MissingProvider: PushProvider {
    let platform: Platform
    func send(_ delivery: ClaimedDelivery) async -> PushOutcome {
        .failed(reason: "no push provider for \(platform.rawValue) devices")
    }
}
