import Foundation
import HeraldAPNs
import HeraldCore
import HeraldStore
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

    public func send(_ delivery: ClaimedDelivery) async -> PushOutcome {
        let notification = APNsNotification(
            deviceToken: delivery.device.token, topic: delivery.push.pushType == .voip ? topic + ".voip" : topic,
            pushType: delivery.push.pushType, priority: delivery.push.priority,
            expiration: Self.unixSeconds(delivery.expiresAt), collapseID: delivery.push.collapseID, apnsID: delivery.apnsID,
            payload: delivery.push.payload)
        do {
            return try await client(for: delivery.device.environment).send(notification).outcome
        } catch let error as APNsValidationError {
            return .failed(reason: error.reason.rawValue)
        } catch {
            // The client for this environment could not be opened (a configuration error).
            return .failed(reason: "APNs client unavailable: \(error)")
        }
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
