import Crypto
import Foundation
import HeraldPushCore
import HeraldWebPushCore
import Synchronization

/// A fault the Web Push simulator injects: matching pushes (or `count` of them) get the fault's
/// answer instead of 201.
public struct WebPushSimulatorFault: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable {
        /// 410 Gone: the subscription ends (and stays ended).
        case gone
        /// 429 Too Many Requests, with `retry_after` seconds when given.
        case tooManyRequests = "too_many_requests"
        /// 503 Service Unavailable (500 with `status: 500`).
        case serverError = "server_error"
        /// Answer normally, but only after `delay_ms`.
        case delay
        /// 201, then a body that does not end (64 KiB every 50 ms for 30 s): a client must stop reading it.
        case endlessBody = "endless_body"
    }
    public var kind: Kind
    /// Only this subscription's endpoint; nil for every push.
    public var endpoint: String?
    /// How many pushes it answers; nil for all until reset.
    public var count: Int?
    public var retryAfter: Int?
    public var status: Int?
    public var delayMilliseconds: Int?

    public init(kind: Kind, endpoint: String? = nil, count: Int? = nil, retryAfter: Int? = nil, status: Int? = nil, delayMilliseconds: Int? = nil) {
        self.kind = kind
        self.endpoint = endpoint
        self.count = count
        self.retryAfter = retryAfter
        self.status = status
        self.delayMilliseconds = delayMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case kind, endpoint, count, status
        case retryAfter = "retry_after"
        case delayMilliseconds = "delay_ms"
    }
}

/// A subscription the simulator handed out, as a browser's `PushSubscription.toJSON()`.
public struct WebPushSimulatorSubscription: Codable, Sendable, Hashable {
    public struct Keys: Codable, Sendable, Hashable {
        public var p256dh: String
        public var auth: String
    }
    public var endpoint: String
    public var keys: Keys
}

/// One message the simulator accepted and decrypted.
public struct WebPushSimulatorRecord: Codable, Sendable, Hashable {
    public var endpoint: String
    /// The decrypted plaintext (UTF-8).
    public var plaintext: String
    public var ttl: Int
    public var urgency: String
    public var topic: String?
    /// The VAPID key (`k`) that signed it.
    public var vapidKey: String

    enum CodingKeys: String, CodingKey {
        case endpoint, plaintext, ttl, urgency, topic
        case vapidKey = "vapid_key"
    }
}

/// What the simulator counts.
public struct WebPushSimulatorStats: Codable, Sendable, Hashable {
    public var accepted = 0
    /// By status and reason (`401 vapid`, `410 gone`, …).
    public var rejected: [String: Int] = [:]
    public var subscriptions = 0
    /// Bytes of endless bodies written (the server's count: what a closed connection dropped included).
    public var endlessBodyBytes = 0

    enum CodingKeys: String, CodingKey {
        case accepted, rejected, subscriptions
        case endlessBodyBytes = "endless_body_bytes"
    }
}

final class WebPushSimulatorState: Sendable {
    struct Subscriber {
        var privateKey: P256.KeyAgreement.PrivateKey
        var auth: [UInt8]
        /// The application server key the subscription was made with (nil: any).
        var applicationServerKey: String?
        var gone = false
    }

    private struct State {
        var subscribers: [String: Subscriber] = [:]
        var notifications: [String: [WebPushSimulatorRecord]] = [:]
        var faults: [Int: WebPushSimulatorFault] = [:]
        var nextFault = 0
        var stats = WebPushSimulatorStats()
        /// Authorization headers already verified, with their key and expiry: a push service
        /// checks a token once, not once per message.
        var verified: [String: (key: String, expires: Date)] = [:]
    }
    private let state = Mutex(State())

    /// A new subscription under `origin`, optionally bound to an application server key.
    func subscribe(origin: String, applicationServerKey: String?) -> WebPushSimulatorSubscription {
        let key = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { _ in UInt8.random(in: .min ... .max) }
        let id = Base64URL.encode((0..<18).map { _ in UInt8.random(in: .min ... .max) })
        let endpoint = "\(origin)/push/\(id)"
        state.withLock { s in
            s.subscribers[id] = Subscriber(privateKey: key, auth: auth, applicationServerKey: applicationServerKey)
            s.stats.subscriptions += 1
        }
        return WebPushSimulatorSubscription(
            endpoint: endpoint, keys: .init(p256dh: Base64URL.encode(Array(key.publicKey.x963Representation)), auth: Base64URL.encode(auth)))
    }

    func subscriber(_ id: String) -> Subscriber? { state.withLock { $0.subscribers[id] } }

    func end(_ id: String) { state.withLock { $0.subscribers[id]?.gone = true } }

    /// The key of an already-verified header still within its expiry.
    func verifiedKey(_ header: String, now: Date) -> String? {
        state.withLock { s in
            guard let entry = s.verified[header], entry.expires > now else { return nil }
            return entry.key
        }
    }

    func rememberVerified(_ header: String, key: String, expires: Date) {
        state.withLock { s in
            if s.verified.count > 10_000 { s.verified = [:] }
            s.verified[header] = (key, expires)
        }
    }

    func fault(for endpoint: String) -> WebPushSimulatorFault? {
        state.withLock { s in
            guard let (id, fault) = s.faults.sorted(by: { $0.key < $1.key }).first(where: { $0.value.endpoint == nil || $0.value.endpoint == endpoint })
            else { return nil }
            if let count = fault.count {
                if count <= 1 { s.faults[id] = nil } else { s.faults[id]?.count = count - 1 }
            }
            return fault
        }
    }

    func addFault(_ fault: WebPushSimulatorFault) -> Int {
        state.withLock { s in
            s.nextFault += 1
            s.faults[s.nextFault] = fault
            return s.nextFault
        }
    }

    func record(_ record: WebPushSimulatorRecord) {
        state.withLock { s in
            s.notifications[record.endpoint, default: []].append(record)
            s.stats.accepted += 1
        }
    }

    func streamed(_ bytes: Int) { state.withLock { $0.stats.endlessBodyBytes += bytes } }

    func rejected(_ status: Int, _ reason: String) { state.withLock { $0.stats.rejected["\(status) \(reason)", default: 0] += 1 } }

    var stats: WebPushSimulatorStats { state.withLock { $0.stats } }

    func notifications(endpoint: String?) -> [WebPushSimulatorRecord] {
        state.withLock { s in endpoint.map { s.notifications[$0] ?? [] } ?? s.notifications.values.flatMap { $0 } }
    }

    /// Forgets messages, faults and counts; subscriptions stay.
    func reset() {
        state.withLock { s in
            s.notifications = [:]
            s.faults = [:]
            s.stats = WebPushSimulatorStats(subscriptions: s.subscribers.count)
        }
    }
}
