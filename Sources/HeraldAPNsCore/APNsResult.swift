public import Foundation
public import HeraldPushCore

/// What happened to one notification.
public enum APNsResult: Sendable, Hashable {
    /// 200: APNs took it.
    case accepted(apnsID: UUID)
    /// APNs answered with an error status and reason. `timestamp` comes with 410.
    case rejected(status: Int, reason: APNsReason, timestamp: Date?, retryAfter: Duration?)
    /// No HTTP answer.
    case transportFailure(TransportFailure)
}

/// What the caller should do with a result.
public enum APNsAction: Sendable, Hashable {
    /// Delivered; record the apns-id.
    case done
    /// Try again later; `after` is the server's Retry-After when it gave one.
    case retry(after: Duration?, scope: RetryScope)
    /// The token is dead. With a timestamp (410), delete the device only if it was not
    /// re-registered after it; without one (400 BadDeviceToken/DeviceTokenNotForTopic),
    /// disable the device for that app and environment.
    case tokenDead(since: Date?)
    /// The provider token was refused: mint a new JWT (respecting the 20-minute floor) and retry once.
    case refreshCredentials
    /// The payload is too large: shrink it and retry once, else fail.
    case shrinkPayload
    /// Do not retry: the request is wrong. Log and count the reason.
    case fail(reason: String)

    /// How far a retry's back-off reaches.
    public enum RetryScope: Sendable, Hashable {
        /// Only this device token is rate limited (429 TooManyRequests).
        case token
        /// The whole key (429 TooManyProviderTokenUpdates).
        case providerToken
        /// The server or the connection (500, 503, reset, GOAWAY).
        case server
    }
}

extension APNsResult {
    /// Classifies the result: 400 BadDeviceToken/DeviceTokenNotForTopic and 410 → token dead; 403
    /// Expired/InvalidProviderToken → refresh; 413 → shrink; 429 and 5xx → retry; other 4xx → fail.
    public var action: APNsAction {
        switch self {
        case .accepted:
            return .done
        case .transportFailure(let failure):
            switch failure {
            case .protocolError(let text): return .fail(reason: "protocol error: \(text)")
            default: return .retry(after: nil, scope: .server)
            }
        case .rejected(let status, let reason, let timestamp, let retryAfter):
            switch (status, reason) {
            case (400, .badDeviceToken), (400, .deviceTokenNotForTopic):
                return .tokenDead(since: nil)
            case (410, _):
                return .tokenDead(since: timestamp)
            case (403, .expiredProviderToken), (403, .invalidProviderToken):
                return .refreshCredentials
            case (413, _):
                return .shrinkPayload
            case (429, .tooManyProviderTokenUpdates):
                return .retry(after: retryAfter, scope: .providerToken)
            case (429, _):
                return .retry(after: retryAfter, scope: .token)
            case (500..., _):
                return .retry(after: retryAfter, scope: .server)
            default:
                return .fail(reason: reason.rawValue)
            }
        }
    }
}
