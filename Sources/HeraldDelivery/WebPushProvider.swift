import Foundation
import HeraldCore
import HeraldStore
import HeraldWebPush
import Synchronization

/// Web Push for one app's browser and UnifiedPush subscriptions: the push's JSON document (what an
/// APNs push carries) encrypted to the subscription (RFC 8291), signed with the app's VAPID key
/// (RFC 8292), sent to the subscription's push service (RFC 8030).
///
/// A push service that says "too many requests" slows down only its own origin: the provider
/// remembers the origin's Retry-After and holds that origin's other pushes back itself, so the
/// app's pushes to every other push service keep flowing.
public final class WebPushProvider: PushProvider {
    public var platform: Platform { .web }
    private let client: WebPushClient
    private let signer: VAPIDSigner
    private let now: @Sendable () -> Date
    /// Origin → not before, from a 429 (or 406, or 5xx) with Retry-After.
    private let backOff = Mutex<[String: Date]>([:])
    /// Endpoints parsed before: a URL parse per message cost as much as the HTTP/2 send.
    private let endpoints = Mutex<[String: WebPushEndpoint]>([:])

    /// The parsed endpoint of a stored token (the cache starts over past 10,000 endpoints).
    private func endpoint(_ token: String) -> WebPushEndpoint? {
        if let known = endpoints.withLock({ $0[token] }) { return known }
        guard let parsed = try? WebPushEndpoint(token) else { return nil }
        endpoints.withLock { cache in
            if cache.count >= 10_000 { cache.removeAll(keepingCapacity: true) }
            cache[token] = parsed
        }
        return parsed
    }

    public init(client: WebPushClient, signer: VAPIDSigner, now: @escaping @Sendable () -> Date = { Date() }) {
        self.client = client
        self.signer = signer
        self.now = now
    }

    public func send(_ delivery: ClaimedDelivery) async -> PushOutcome {
        guard let keys = delivery.device.webKeys, let endpoint = endpoint(delivery.device.token) else {
            return .failed(reason: "not a Web Push subscription")
        }
        let origin = endpoint.origin
        let start = now()
        if let until = backOff.withLock({ $0[origin] }), until > start {
            return .retry(after: .milliseconds(Int64(until.timeIntervalSince(start) * 1000)), scope: .destination, reason: "origin backing off")
        }
        let message: WebPushMessage
        do {
            message = try Self.message(for: delivery, keys: keys, endpoint: endpoint, signer: signer, now: start)
        } catch {
            return .failed(reason: "\(error)")
        }
        let response: WebPushResponse
        do {
            response = try await client.send(message)
        } catch {
            if case .endpoint(let refusal) = error { return .failed(reason: refusal.description) }
            return .retry(after: nil, scope: .destination, reason: error.description)
        }
        return outcome(of: WebPushAnswer(status: response.status, retryAfterHeader: response.retryAfter), origin: origin)
    }

    /// The push service's answer in the outbox's terms: the one place Web Push answers are mapped.
    func outcome(of answer: WebPushAnswer, origin: String) -> PushOutcome {
        let reason = answer.reason
        switch answer {
        case .delivered: return .delivered
        // No timestamp from the service: the answer's moment stands in (a later registration keeps the device).
        case .subscriptionGone: return .tokenDead(since: now(), reason: reason)
        case .tooLarge: return .shrinkPayload(reason: reason)
        case .vapidRefused: return .refreshCredentials(reason: reason)
        case .backOff(_, let after), .serviceError(_, let after):
            if let after {
                let now = self.now()
                let until = now.addingTimeInterval(after.seconds)
                backOff.withLock { backOff in
                    // Hosts are anyone's to register: past a thousand, the lapsed back-offs go.
                    if backOff.count >= 1_000 { backOff = backOff.filter { $0.value > now } }
                    backOff[origin] = max(backOff[origin] ?? until, until)
                }
            }
            return .retry(after: after, scope: .destination, reason: reason)
        case .refused: return .failed(reason: reason)
        }
    }

    public func shutdown() async { await client.shutdown() }

    /// The encrypted, signed message for a delivery. The plaintext is the push's JSON document;
    /// one that does not fit a record (3,993 bytes) is shrunk first (Kasia's inline payload becomes null).
    public static func message(
        for delivery: ClaimedDelivery, keys: WebPushKeys, endpoint: WebPushEndpoint, signer: VAPIDSigner, now: Date
    ) throws -> WebPushMessage {
        var push = delivery.push
        while push.payload.count > WebPushEncryption.maximumPlaintext, let smaller = push.shrunk() { push = smaller }
        let body = try WebPushEncryption.encrypt(push.payload, to: keys)
        let authorization = signer.authorization(audience: endpoint.origin, now: now)
        let remaining = delivery.expiresAt.timeIntervalSince(now)
        let ttl = remaining.isFinite ? Int(min(max(remaining, 0), Double(WebPushMessage.maximumTTLSeconds))) : WebPushMessage.maximumTTLSeconds
        let seen = push.pushType == .alert || push.pushType == .voip
        let urgency: WebPushUrgency = seen ? .high : push.priority == .immediate ? .normal : .low
        return WebPushMessage(
            endpoint: endpoint, body: body, ttlSeconds: ttl, urgency: urgency, topic: WebPushMessage.topic(forCollapseID: push.collapseID),
            authorization: authorization)
    }
}
