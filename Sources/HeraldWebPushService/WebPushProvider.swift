public import Foundation
import HeraldAPNsCore
import HeraldCore
public import HeraldDelivery
public import HeraldPushCore
public import HeraldStore
public import HeraldWebPush
public import HeraldWebPushCore
import Synchronization
import WebPushCrypto

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
    /// Blame for 401/403: which trusted origins accepted the app's VAPID key, and which of those refused it since.
    private let keyEvidence = Mutex(KeyEvidence())
    /// Endpoints parsed before: a URL parse per message cost as much as the HTTP/2 send.
    private let endpoints = Mutex<[String: WebPushEndpoint]>([:])

    /// Connections to push services, of the client every app may share (VAPID tokens are signed
    /// per origin, not refreshed).
    public var stats: ProviderStats { ProviderStats(connectionsOpen: client.connectionsOpen) }

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

    /// - Parameter trusted: the push services whose refusals may pause the app (the browsers' by default).
    public init(
        client: WebPushClient, signer: VAPIDSigner, trusted: TrustedPushServices = .browsers, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.client = client
        self.signer = signer
        self.now = now
        self.trusted = trusted
    }

    /// Whose refusals are evidence against the app's key; any other origin that refuses is backed
    /// off as a whole for `refusingOriginBackOff`.
    private let trusted: TrustedPushServices
    /// How long an untrusted origin that answered 401/403 waits before Herald sends to it again.
    static let refusingOriginBackOff: TimeInterval = 60

    public func send(_ delivery: ClaimedDelivery) async -> PushOutcome {
        switch prepare(delivery) {
        case .settled(let outcome): return outcome
        case .ready(let message):
            do {
                return outcome(of: .success(try await client.send(message)), origin: message.endpoint.origin)
            } catch {
                return outcome(of: .failure(error), origin: message.endpoint.origin)
            }
        }
    }

    /// Deliveries encrypted per chunk: the chunks encrypt side by side on the task pool, and each
    /// goes to the client as one batch as soon as it is encrypted.
    static let chunkSize = 32

    /// A lane's batch: encryption (the CPU work) spread over chunks running side by side, each
    /// chunk's messages handed to the client together (one hop and one flush per HTTP/2 origin).
    public func send(_ deliveries: [ClaimedDelivery]) async -> [PushOutcome] {
        guard deliveries.count > 1 else { return deliveries.isEmpty ? [] : [await send(deliveries[0])] }
        let chunks = stride(from: 0, to: deliveries.count, by: Self.chunkSize).map { $0..<min($0 + Self.chunkSize, deliveries.count) }
        guard chunks.count > 1 else { return await send(chunk: deliveries[...]) }
        return await withTaskGroup(of: (Int, [PushOutcome]).self) { group in
            for chunk in chunks { group.addTask { (chunk.lowerBound, await self.send(chunk: deliveries[chunk])) } }
            var outcomes = [PushOutcome?](repeating: nil, count: deliveries.count)
            for await (start, chunkOutcomes) in group {
                for (offset, outcome) in chunkOutcomes.enumerated() { outcomes[start + offset] = outcome }
            }
            return outcomes.map { $0! }
        }
    }

    private func send(chunk: ArraySlice<ClaimedDelivery>) async -> [PushOutcome] {
        var outcomes = [PushOutcome?](repeating: nil, count: chunk.count)
        var messages: [WebPushMessage] = []
        var sent: [(slot: Int, origin: String)] = []
        messages.reserveCapacity(chunk.count)
        for (slot, delivery) in chunk.enumerated() {
            switch prepare(delivery) {
            case .settled(let outcome): outcomes[slot] = outcome
            case .ready(let message):
                sent.append((slot, message.endpoint.origin))
                messages.append(message)
            }
        }
        let results = await client.send(messages)
        for ((slot, origin), result) in zip(sent, results) { outcomes[slot] = outcome(of: result, origin: origin) }
        return outcomes.map { $0! }
    }

    /// A delivery made ready to send (encrypted and signed), or already settled without sending.
    private enum Prepared {
        case ready(WebPushMessage)
        case settled(PushOutcome)
    }

    private func prepare(_ delivery: ClaimedDelivery) -> Prepared {
        guard let keys = delivery.device.attributes.webPushKeys, let endpoint = endpoint(delivery.device.token) else {
            return .settled(.failed(reason: "not a Web Push subscription"))
        }
        let start = now()
        if let until = backOff.withLock({ $0[endpoint.origin] }), until > start {
            return .settled(
                .retry(after: .milliseconds(Int64(until.timeIntervalSince(start) * 1000)), scope: .destination, reason: "origin backing off"))
        }
        do {
            return .ready(try Self.message(for: delivery, keys: keys, endpoint: endpoint, signer: signer, now: start))
        } catch {
            return .settled(.failed(reason: "\(error)"))
        }
    }

    /// What the client's answer (or failure) means for the outbox.
    private func outcome(of result: Result<WebPushResponse, WebPushTransportError>, origin: String) -> PushOutcome {
        switch result {
        case .success(let response):
            return outcome(of: WebPushAnswer(status: response.status, retryAfterHeader: response.retryAfter), origin: origin)
        case .failure(.endpoint(.unavailable(let host))):
            // DNS failed for now: the push waits, as for any other passing failure of its origin.
            return .retry(after: nil, scope: .destination, reason: "DNS lookup of \(host) failed for now")
        case .failure(.endpoint(let refusal)):
            return .failed(reason: refusal.description)
        case .failure(let error):
            return .retry(after: nil, scope: .destination, reason: error.description)
        }
    }

    /// The push service's answer in the outbox's terms: the one place Web Push answers are mapped.
    func outcome(of answer: WebPushAnswer, origin: String) -> PushOutcome {
        let reason = answer.reason
        switch answer {
        case .delivered:
            // Only a trusted service's word about the key is evidence either way.
            if trusted.trusts(origin: origin) { keyEvidence.withLock { $0.accepted(by: origin) } }
            return .delivered
        // No timestamp from the service: the answer's moment stands in (a later registration keeps the device).
        case .subscriptionGone: return .tokenDead(since: now(), reason: reason)
        case .tooLarge: return .shrinkPayload(reason: reason)
        case .vapidRefused:
            // Anyone may run a push service that answers 403: the refusal is charged to the
            // subscription (its pushes back off), and pauses the app only when trusted origins
            // that took the app's key before refuse it now.
            let keyRefused = keyEvidence.withLock { $0.refused(by: origin, now: now()) }
            if keyRefused { return .refreshCredentials(reason: reason) }
            // An origin the operator does not trust waits as a whole too: one that refuses every
            // push (anyone's, registered by anyone) then costs a request a minute, not one a push.
            if !trusted.trusts(origin: origin) { holdOrigin(origin, for: Self.refusingOriginBackOff) }
            return .retry(after: nil, scope: .token, reason: reason)
        case .backOff(_, let after), .serviceError(_, let after):
            if let after { holdOrigin(origin, for: after.seconds) }
            return .retry(after: after, scope: .destination, reason: reason)
        case .refused: return .failed(reason: reason)
        }
    }

    /// Holds `origin`'s pushes back for `seconds` (the longer of this and a hold it has).
    private func holdOrigin(_ origin: String, for seconds: TimeInterval) {
        let now = self.now()
        let until = now.addingTimeInterval(seconds)
        backOff.withLock { backOff in
            // Hosts are anyone's to register: past a thousand, the lapsed back-offs go.
            if backOff.count >= 1_000 { backOff = backOff.filter { $0.value > now } }
            backOff[origin] = max(backOff[origin] ?? until, until)
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

/// What the push services' answers say of the app's VAPID key: a 401/403 from one origin may be
/// that origin's (or that subscription's) doing; the same from trusted origins that accepted the
/// key before is the key's. An origin the operator does not trust is never evidence: its
/// registrant chose it.
struct KeyEvidence {
    /// Trusted origins that accepted the key in this process (at most `maximumOrigins`).
    private var acceptedBy: Set<String> = []
    /// Of those, the ones that refused it since, and when.
    private var refusedBy: [String: Date] = [:]
    /// Known origins refusing within `window` that make the refusal the key's.
    static let refusingOrigins = 2
    static let window: TimeInterval = 600
    static let maximumOrigins = 1_000

    mutating func accepted(by origin: String) {
        refusedBy[origin] = nil
        guard !acceptedBy.contains(origin) else { return }
        if acceptedBy.count >= Self.maximumOrigins { acceptedBy.removeFirst() }
        acceptedBy.insert(origin)
    }

    /// Records a refusal; true when it is the key's.
    mutating func refused(by origin: String, now: Date) -> Bool {
        guard acceptedBy.contains(origin) else { return false }
        refusedBy[origin] = now
        refusedBy = refusedBy.filter { now.timeIntervalSince($0.value) < Self.window }
        return refusedBy.count >= Self.refusingOrigins
    }
}
