import Foundation
public import HeraldAPNs
public import HeraldAPNsCore
import HeraldCore
public import HeraldDelivery
public import HeraldPushCore
public import HeraldStore
import Synchronization

/// APNs for one app: a client (key, JWT, connections) per APNs environment, opened on first use,
/// so a development build's sandbox token goes to Apple's sandbox host even when the app's key
/// pushes to production.
public final class APNsPushProvider: PushProvider {
    public var platform: Platform { .ios }
    /// The app's bundle id (`apns-topic`); VoIP pushes get `.voip` appended.
    public let topic: String
    private let makeClient: @Sendable (APNsEnvironment) throws -> APNsClient
    private let clients = Mutex<[APNsEnvironment: APNsClient]>([:])

    /// - Parameter makeClient: opens the client for an environment; called at most once per environment.
    public init(topic: String, makeClient: @escaping @Sendable (APNsEnvironment) throws -> APNsClient) {
        self.topic = topic
        self.makeClient = makeClient
    }

    /// One client for every environment (tests, a simulator).
    public convenience init(client: APNsClient, topic: String) {
        self.init(topic: topic, makeClient: { _ in client })
    }

    /// The client for `environment`, opened now if this is its first push.
    func client(for environment: APNsEnvironment) throws -> APNsClient {
        try clients.withLock { clients in
            if let client = clients[environment] { return client }
            let client = try makeClient(environment)
            clients[environment] = client
            return client
        }
    }

    /// Connections of every environment's client; provider tokens minted by their sources
    /// (counted once where environments share a key's source).
    public var stats: ProviderStats {
        let open = clients.withLock { Array($0.values) }
        var sources: [ObjectIdentifier: APNsProviderTokenSource] = [:]
        for client in open { sources[ObjectIdentifier(client.tokens)] = client.tokens }
        return ProviderStats(
            connectionsOpen: open.map(\.connectionsOpen).reduce(0, +), tokenRefreshes: sources.values.map(\.mintedCount).reduce(0, +))
    }

    public func send(_ delivery: ClaimedDelivery) async -> PushOutcome {
        do {
            return try await client(for: delivery.device.attributes.apnsEnvironment).send(notification(for: delivery)).outcome
        } catch let error as APNsValidationError {
            return .failed(reason: error.reason.rawValue)
        } catch {
            return Self.unavailable(error)
        }
    }

    /// A lane's batch: validated here, then each environment's notifications sent as one batch
    /// (their streams handed to the connections together, one wait for the answers).
    public func send(_ deliveries: [ClaimedDelivery]) async -> [PushOutcome] {
        guard deliveries.count > 1 else { return deliveries.isEmpty ? [] : [await send(deliveries[0])] }
        var outcomes = [PushOutcome?](repeating: nil, count: deliveries.count)
        var byEnvironment: [APNsEnvironment: [(index: Int, notification: APNsNotification)]] = [:]
        // A fan-out's batch shares one payload: it is inspected once (the same storage compares in O(1)).
        var inspected: (payload: [UInt8], summary: APNsPayloadSummary)?
        for (index, delivery) in deliveries.enumerated() {
            let notification = notification(for: delivery)
            do throws(APNsValidationError) {
                let known = inspected.flatMap { $0.payload == notification.payload ? $0.summary : nil }
                inspected = (notification.payload, try notification.validate(payloadSummary: known))
                byEnvironment[delivery.device.attributes.apnsEnvironment, default: []].append((index, notification))
            } catch {
                outcomes[index] = .failed(reason: error.reason.rawValue)
            }
        }
        await withTaskGroup(of: [(Int, PushOutcome)].self) { group in
            for (environment, batch) in byEnvironment {
                group.addTask {
                    do {
                        let results = try await self.client(for: environment).sendValidated(batch.map(\.notification))
                        return zip(batch, results).map { ($0.index, $1.outcome) }
                    } catch {
                        return batch.map { ($0.index, Self.unavailable(error)) }
                    }
                }
            }
            for await settled in group { for (index, outcome) in settled { outcomes[index] = outcome } }
        }
        return outcomes.map { $0! }
    }

    /// The notification a delivery becomes.
    private func notification(for delivery: ClaimedDelivery) -> APNsNotification {
        APNsNotification(
            deviceToken: delivery.device.token, topic: delivery.push.pushType == .voip ? topic + ".voip" : topic,
            pushType: delivery.push.pushType, priority: delivery.push.priority,
            expiration: Self.unixSeconds(delivery.expiresAt), collapseID: delivery.push.collapseID, apnsID: delivery.apnsID,
            payload: delivery.push.payload)
    }

    /// The client for an environment could not be opened (a configuration error).
    private static func unavailable(_ error: any Error) -> PushOutcome {
        .failed(reason: "APNs client unavailable: \(error)")
    }

    public func shutdown() async {
        let open = clients.withLock { Array($0.values) }
        var closed = Set<ObjectIdentifier>()
        for client in open where closed.insert(ObjectIdentifier(client)).inserted { await client.shutdown() }
    }

    /// `apns-expiration`: whole unix seconds, clamped to what the header can carry.
    static func unixSeconds(_ date: Date) -> Int {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return Int(min(seconds, Double(UInt32.max)))
    }
}

extension APNsResult {
    /// APNs's answer in the outbox's terms: the one place APNs is mapped.
    public var outcome: PushOutcome {
        let reason: String = switch self {
        case .accepted: "accepted"
        case .rejected(_, let r, _, _): r.rawValue
        case .transportFailure(let f): f.description
        }
        switch action {
        case .done: return .delivered
        case .tokenDead(let since): return .tokenDead(since: since, reason: reason)
        case .refreshCredentials: return .refreshCredentials(reason: reason)
        case .shrinkPayload: return .shrinkPayload(reason: reason)
        case .fail: return .failed(reason: reason)
        case .retry(let after, let scope):
            let neutral: PushOutcome.RetryScope = switch scope {
            case .token: .token
            case .providerToken: .credentials
            case .server: .service
            }
            return .retry(after: after, scope: neutral, reason: reason)
        }
    }
}
