public import Foundation
import HeraldAPNsCore
import HeraldCore
public import HeraldDelivery
public import HeraldFCM
public import HeraldFCMCore
public import HeraldPushCore
public import HeraldStore
import Synchronization

/// FCM for one app's Android devices. Every push goes as a data-only message: an E2EE app must
/// decrypt before it shows anything, and FCM shows a `notification` block itself.
public final class FCMPushProvider: PushProvider {
    public var platform: Platform { .android }
    private let client: FCMClient
    private let now: @Sendable () -> Date
    /// Tokens delivered to in this process: tells a token's SENDER_ID_MISMATCH (a token of
    /// another Firebase project, which anyone may register) from the app's (its known good tokens
    /// fail too), so neither a foreign token pauses the app nor a misconfigured app loses its tokens.
    private let knownGood = Mutex(KnownGoodTokens())

    public init(client: FCMClient, now: @escaping @Sendable () -> Date = { Date() }) {
        self.client = client
        self.now = now
    }

    /// Connections to FCM; OAuth access tokens fetched.
    public var stats: ProviderStats {
        ProviderStats(connectionsOpen: client.connectionsOpen, tokenRefreshes: client.tokens.exchangeCount)
    }

    public func send(_ delivery: ClaimedDelivery) async -> PushOutcome {
        let message: FCMMessage
        do {
            message = try Self.message(for: delivery, now: now())
        } catch {
            return .failed(reason: error.description)
        }
        let result: FCMResult
        do {
            result = try await client.send(message)
        } catch {
            return .failed(reason: error.description)
        }
        return outcome(of: result, token: delivery.device.token)
    }

    /// FCM's answer in the outbox's terms: the one place FCM is mapped.
    func outcome(of result: FCMResult, token: String) -> PushOutcome {
        let reason: String = switch result {
        case .accepted: "accepted"
        case .rejected(let answer): answer.reason
        case .transportFailure(let text): text
        }
        switch result.action {
        case .done:
            knownGood.withLock { $0.delivered(token) }
            return .delivered
        // FCM gives no timestamp: the answer's own moment stands in, so the device is deleted
        // unless it registered again after it (compare-and-delete, as for APNs's 410).
        case .tokenDead: return .tokenDead(since: now(), reason: reason)
        case .senderMismatch:
            switch knownGood.withLock({ $0.mismatch(token) }) {
            case .token: return .tokenDead(since: now(), reason: reason)
            case .app: return .refreshCredentials(reason: reason)
            // Nothing delivered yet to tell: the token waits with back-off, and is neither dropped nor blamed on the app.
            case .unknown: return .retry(after: nil, scope: .token, reason: reason)
            }
        case .refreshAccessToken, .credentialsRefused: return .refreshCredentials(reason: reason)
        case .retry(let after, let scope):
            let neutral: PushOutcome.RetryScope = switch scope {
            case .device: .token
            case .project: .credentials
            case .service: .service
            }
            return .retry(after: after, scope: neutral, reason: reason)
        case .fail(let text): return .failed(reason: text)
        }
    }

    public func shutdown() async { await client.shutdown() }

    /// The data-only message for a delivery (README "FCM messages" has the mapping).
    /// - Throws: `FCMValidationError` when even the shrunk push is over FCM's 4,096 bytes.
    public static func message(for delivery: ClaimedDelivery, now: Date) throws(FCMValidationError) -> FCMMessage {
        var push = delivery.push
        // A `custom` event's own data map goes verbatim (checked when published).
        var data = push.fcmData ?? dataMap(of: push)
        // Over 4,096 bytes: drop what may be dropped (the Kasia inline payload), as for APNs's 413.
        while FCMMessage.dataBytes(of: data) > FCMMessage.maximumDataBytes, push.fcmData == nil, let smaller = push.shrunk() {
            push = smaller
            data = dataMap(of: push)
        }
        let seen = push.pushType == .alert || push.pushType == .voip
        let remaining = delivery.expiresAt.timeIntervalSince(now)
        let ttl = remaining.isFinite ? Int(min(max(remaining, 0), Double(FCMMessage.maximumTTLSeconds))) : FCMMessage.maximumTTLSeconds
        let message = FCMMessage(
            target: delivery.device.attributes.tokenKind == .fid ? .fid(delivery.device.token) : .token(delivery.device.token), data: data, priority: seen && push.priority == .immediate ? .high : .normal,
            ttlSeconds: ttl, collapseKey: push.collapseID)
        try message.validate()
        return message
    }

    /// Every top-level field of the rendered payload but `aps`, strings as they are and anything
    /// else as compact JSON; the alert's `title`, `subtitle` and `body` as fallback texts.
    static func dataMap(of push: RenderedPush) -> [String: String] {
        guard let root = try? JSONValue(parsing: push.payload), let fields = root.objectFields else { return [:] }
        var data: [String: String] = [:]
        for field in fields where field.key != "aps" && !FCMMessage.isReservedDataKey(field.key) {
            if case .string(let text) = field.value { data[field.key] = text } else { data[field.key] = String(decoding: field.value.encoded, as: UTF8.self) }
        }
        switch root[path: ["aps", "alert"]] {
        case .string(let body)?: data["body"] = data["body"] ?? body
        case .object(let alert)?:
            for part in alert where ["title", "subtitle", "body"].contains(part.key) {
                if case .string(let text) = part.value, data[part.key] == nil { data[part.key] = text }
            }
        default: break
        }
        // How the alert presents, for the app that builds the notification: `aps` as compact JSON
        // holding Apple's keys (`sound`, `category`, `thread-id`, …), the alert's texts left out.
        let presentation = (root[path: ["aps"]]?.objectFields ?? []).filter { presentationKeys.contains($0.key) }
        if !presentation.isEmpty { data["aps"] = String(decoding: JSONValue.object(presentation).encoded, as: UTF8.self) }
        return data
    }

    /// The `aps` keys an FCM data map carries: the presentation's and the thread.
    static let presentationKeys = Set(PushPresentation.apsKeys + ["thread-id"])
}

/// The tokens an app's FCM sends reached, to tell whose a SENDER_ID_MISMATCH is.
struct KnownGoodTokens {
    private var tokens: Set<String> = []
    static let capacity = 1_000

    enum Blame { case token, app, unknown }

    mutating func delivered(_ token: String) {
        guard !tokens.contains(token) else { return }
        if tokens.count >= Self.capacity { tokens.removeFirst() }
        tokens.insert(token)
    }

    /// A known good token refused: the app's project is at fault. Another token refused while
    /// others went through: that token is another project's. Nothing delivered yet: unknown.
    mutating func mismatch(_ token: String) -> Blame {
        if tokens.contains(token) { return .app }
        return tokens.isEmpty ? .unknown : .token
    }
}
