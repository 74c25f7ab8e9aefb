import Crypto
import Foundation
import HeraldPushCore

/// RFC 8030 §5.3: how soon the user agent should be woken for a message.
public enum WebPushUrgency: String, Sendable, Hashable, CaseIterable {
    case veryLow = "very-low", low, normal, high
}

/// One push request to a subscription's endpoint (RFC 8030 §5): the encrypted body and the
/// headers every push service reads.
public struct WebPushMessage: Sendable {
    /// RFC 8030 leaves TTL unbounded; push services keep messages for at most about four weeks.
    public static let maximumTTLSeconds = 2_419_200
    /// A `Topic` is at most 32 characters of the base64url alphabet (RFC 8030 §5.4).
    public static let maximumTopicLength = 32

    public var endpoint: WebPushEndpoint
    /// The `aes128gcm` body (`WebPushEncryption.encrypt`).
    public var body: [UInt8]
    public var ttlSeconds: Int
    public var urgency: WebPushUrgency
    public var topic: String?
    /// `vapid t=…, k=…`.
    public var authorization: String

    public init(endpoint: WebPushEndpoint, body: [UInt8], ttlSeconds: Int, urgency: WebPushUrgency, topic: String?, authorization: String) {
        self.endpoint = endpoint
        self.body = body
        self.ttlSeconds = min(max(ttlSeconds, 0), Self.maximumTTLSeconds)
        self.urgency = urgency
        self.topic = topic
        self.authorization = authorization
    }

    /// A header every push carries (or may: `Topic`).
    public enum Header: Sendable, Hashable {
        case ttl, urgency, contentEncoding, contentType, authorization, topic

        /// As HTTP/1.1 requests usually spell it.
        public var name: String {
            switch self {
            case .ttl: "TTL"
            case .urgency: "Urgency"
            case .contentEncoding: "Content-Encoding"
            case .contentType: "Content-Type"
            case .authorization: "Authorization"
            case .topic: "Topic"
            }
        }

        /// As HTTP/2 requires it: lower case (RFC 9113 §8.2.1).
        public var lowercasedName: String {
            switch self {
            case .ttl: "ttl"
            case .urgency: "urgency"
            case .contentEncoding: "content-encoding"
            case .contentType: "content-type"
            case .authorization: "authorization"
            case .topic: "topic"
            }
        }
    }

    /// The request's headers, in the order sent.
    public var headers: [(header: Header, value: String)] {
        var headers: [(Header, String)] = [
            (.ttl, String(ttlSeconds)), (.urgency, urgency.rawValue), (.contentEncoding, "aes128gcm"),
            (.contentType, "application/octet-stream"), (.authorization, authorization),
        ]
        if let topic { headers.append((.topic, topic)) }
        return headers
    }

    /// The `Topic` for a collapse id: the id itself when it is already at most 32 base64url
    /// characters, else the first 32 characters of the base64url SHA-256 of it (the same id
    /// always gives the same topic, so a newer message still replaces an older one).
    public static func topic(forCollapseID id: String?) -> String? {
        guard let id, !id.isEmpty else { return nil }
        if id.utf8.count <= maximumTopicLength, id.utf8.allSatisfy(Base64URL.isAlphabet) { return id }
        return String(Base64URL.encode(Array(SHA256.hash(data: Array(id.utf8)))).prefix(maximumTopicLength))
    }
}

/// What a push service's answer to one message means (RFC 8030 §5, RFC 8292 §4, and what
/// Mozilla, Google and Apple document): the one place Web Push status codes are read.
public enum WebPushAnswer: Sendable, Hashable {
    /// 201 (or 202, or any 2xx): the service took the message.
    case delivered
    /// 404 or 410: the subscription is gone for good.
    case subscriptionGone(status: Int)
    /// 413: the body is too large.
    case tooLarge
    /// 429 (and 406, which some services answer when a client sends too fast): slow down to this
    /// origin, not before `retryAfter` when the service says so.
    case backOff(status: Int, retryAfter: Duration?)
    /// 401 or 403: the service refused the VAPID token or key.
    case vapidRefused(status: Int)
    /// 5xx: the service failed; try again, not before `retryAfter` when it says so.
    case serviceError(status: Int, retryAfter: Duration?)
    /// Anything else (400, a redirect Herald does not follow): the request stays wrong.
    case refused(status: Int)

    public init(status: Int, retryAfterHeader: String?) {
        switch status {
        case 200..<300: self = .delivered
        case 404, 410: self = .subscriptionGone(status: status)
        case 413: self = .tooLarge
        case 406, 429: self = .backOff(status: status, retryAfter: RetryAfter.delay(retryAfterHeader))
        case 401, 403: self = .vapidRefused(status: status)
        case 500..<600: self = .serviceError(status: status, retryAfter: RetryAfter.delay(retryAfterHeader))
        default: self = .refused(status: status)
        }
    }

    /// For logs, metrics and the store.
    public var reason: String {
        switch self {
        case .delivered: "accepted"
        case .subscriptionGone(let status): "HTTP \(status) subscription gone"
        case .tooLarge: "HTTP 413 payload too large"
        case .backOff(let status, _): "HTTP \(status) too many requests"
        case .vapidRefused(let status): "HTTP \(status) VAPID refused"
        case .serviceError(let status, _): "HTTP \(status) push service error"
        case .refused(let status) where (300..<400).contains(status): "HTTP \(status) redirect not followed"
        case .refused(let status): "HTTP \(status) refused"
        }
    }
}
