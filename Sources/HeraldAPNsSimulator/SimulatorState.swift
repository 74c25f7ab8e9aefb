import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldPushCore
import NIOCore
import Synchronization

/// One notification the simulator accepted, as `GET /notifications` shows it.
public struct RecordedNotification: Sendable, Codable, Hashable {
    public var token: String
    public var apnsID: String
    public var topic: String
    public var pushType: String
    public var priority: Int
    public var expiration: Int?
    public var collapseID: String?
    public var keyID: String
    /// The payload exactly as received (UTF-8 JSON text).
    public var payload: String
    /// Unix time in milliseconds.
    public var receivedAtMs: Int64

    enum CodingKeys: String, CodingKey {
        case token, topic, priority, expiration, payload
        case apnsID = "apns_id", pushType = "push_type", collapseID = "collapse_id", keyID = "key_id"
        case receivedAtMs = "received_at_ms"
    }
}

/// Counters the control port serves at `GET /stats`.
public struct SimulatorStats: Sendable, Codable {
    public var accepted = 0
    public var rejected = 0
    public var reasons: [String: Int] = [:]
    public var connectionsOpened = 0
    public var connectionsOpen = 0
    public var streams = 0
    /// Distinct provider tokens (JWTs) seen per key id.
    public var providerTokens: [String: Int] = [:]
    public var recorded = 0

    enum CodingKeys: String, CodingKey {
        case accepted, rejected, reasons, streams, recorded
        case connectionsOpened = "connections_opened", connectionsOpen = "connections_open"
        case providerTokens = "provider_tokens"
    }
}

/// What a provider token check found.
enum TokenVerdict: Sendable, Equatable {
    case valid(keyID: String, issuedAt: Int64)
    case rejected(APNsReason)
}

/// A fault chosen for one request.
struct AppliedFaults: Sendable {
    var response: (status: Int, reason: String, timestampMs: Int64?, retryAfter: Int?)?
    var delayMs: Int?
}

/// The simulator's shared state: what it trusts, what it recorded, and the faults in force.
final class SimulatorState: Sendable {
    let configuration: APNsSimulatorConfiguration
    private let keysByID: [String: SimulatorKey]

    private struct ActiveFault {
        var id: Int
        var fault: SimulatorFault
        var matched = 0
        var applied = 0
        var expiresAt: Date?
    }

    private struct Data {
        var stats = SimulatorStats()
        var recorded = CircularBuffer<RecordedNotification>()
        var faults: [ActiveFault] = []
        var nextFaultID = 1
        var verifiedTokens: [String: TokenVerdict] = [:]
        var tokensByKey: [String: Set<String>] = [:]
        /// Device tokens whose environment is known (issued or assigned through the control port).
        var environments: [String: APNsEnvironment] = [:]
    }
    private let data = Mutex(Data())

    init(configuration: APNsSimulatorConfiguration) {
        self.configuration = configuration
        self.keysByID = Dictionary(configuration.keys.map { ($0.keyID, $0) }, uniquingKeysWith: { a, _ in a })
    }

    // MARK: Device tokens

    /// A fresh 32-byte token (64 lowercase hex) of `environment`.
    func issueToken(environment: APNsEnvironment) -> String {
        let token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        assign(token: token, to: environment)
        return token
    }

    func assign(token: String, to environment: APNsEnvironment) {
        data.withLock { $0.environments[token.lowercased()] = environment }
    }

    /// The environment `token` belongs to, when the simulator was told.
    func environment(of token: String) -> APNsEnvironment? {
        data.withLock { $0.environments[token] }
    }

    // MARK: Provider tokens

    /// Verifies an ES256 provider token as Apple does: known key id and team, valid
    /// signature, `iat` within the last hour. (The 20-minute update rule is per connection.)
    func verify(jwt: String) -> TokenVerdict {
        let cached = data.withLock { $0.verifiedTokens[jwt] }
        let verdict = cached ?? verifySignature(jwt: jwt)
        guard case .valid(let keyID, let issuedAt) = verdict else {
            if cached == nil { data.withLock { $0.verifiedTokens[jwt] = verdict } }
            return verdict
        }
        let now = Int64(configuration.now().timeIntervalSince1970)
        if now - issuedAt > Int64(configuration.tokenLifetime.seconds) { return .rejected(.expiredProviderToken) }
        return data.withLock { d in
            if cached == nil { d.verifiedTokens[jwt] = verdict }
            if d.tokensByKey[keyID, default: []].insert(jwt).inserted {
                d.stats.providerTokens[keyID] = d.tokensByKey[keyID]!.count
            }
            return verdict
        }
    }

    private func verifySignature(jwt: String) -> TokenVerdict {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
            let signatureBytes = Base64URL.decode(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: Foundation.Data(headerBytes)) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: Foundation.Data(claimBytes)) as? [String: Any],
            header["alg"] as? String == "ES256", let kid = header["kid"] as? String,
            let iss = claims["iss"] as? String, let iat = claims["iat"] as? NSNumber,
            // APNs wants iat as a whole number of seconds.
            iat.doubleValue == iat.doubleValue.rounded()
        else { return .rejected(.invalidProviderToken) }
        guard let key = keysByID[kid], key.teamID == iss else { return .rejected(.invalidProviderToken) }
        guard signatureBytes.count == 64, ES256JWT.verify(Substring(jwt), with: key.publicKey) != nil else {
            return .rejected(.invalidProviderToken)
        }
        return .valid(keyID: kid, issuedAt: iat.int64Value)
    }

    // MARK: Faults

    func addFault(_ fault: SimulatorFault) -> Int {
        data.withLock { d in
            let id = d.nextFaultID
            d.nextFaultID += 1
            let expiresAt = fault.durationMs.map { configuration.now().addingTimeInterval(Double($0) / 1000) }
            d.faults.append(ActiveFault(id: id, fault: fault, expiresAt: expiresAt))
            return id
        }
    }

    /// The response and delay faults that apply to a valid request to `token`.
    func faults(for token: String) -> AppliedFaults {
        data.withLock { d in
            var applied = AppliedFaults()
            guard !d.faults.isEmpty else { return applied }
            let now = configuration.now()
            d.faults.removeAll { $0.expiresAt.map { $0 <= now } ?? false }
            for i in d.faults.indices {
                let f = d.faults[i].fault
                guard f.kind.isConnectionFault == false else { continue }
                if let t = f.token, t != token { continue }
                if f.kind == .delay {
                    if applied.delayMs != nil { continue }
                } else if applied.response != nil {
                    continue
                }
                d.faults[i].matched += 1
                if let every = f.every, d.faults[i].matched % every != 0 { continue }
                if let count = f.count, d.faults[i].applied >= count { continue }
                d.faults[i].applied += 1
                switch f.kind {
                case .delay: applied.delayMs = f.delayMs
                case .unregistered:
                    applied.response = (410, "Unregistered", f.timestampMs ?? Int64(now.timeIntervalSince1970 * 1000), nil)
                case .badToken: applied.response = (400, "BadDeviceToken", nil, nil)
                case .respond:
                    let status = f.status ?? 500
                    applied.response = (status, f.reason ?? SimulatorFault.defaultReason(status: status),
                                        status == 410 ? (f.timestampMs ?? Int64(now.timeIntervalSince1970 * 1000)) : nil,
                                        f.retryAfter)
                case .goaway, .reset, .stall: break
                }
            }
            d.faults.removeAll { f in f.fault.count.map { f.applied >= $0 } ?? false }
            return applied
        }
    }

    /// A connection-level fault due on a connection that has now carried `streams` streams.
    func connectionFault(streams: Int) -> SimulatorFault.Kind? {
        data.withLock { d in
            guard !d.faults.isEmpty else { return nil }
            for i in d.faults.indices {
                let f = d.faults[i].fault
                guard f.kind.isConnectionFault, let after = f.afterStreams, streams == after else { continue }
                d.faults[i].applied += 1
                let kind = f.kind
                d.faults.removeAll { f in f.fault.count.map { f.applied >= $0 } ?? false }
                return kind
            }
            return nil
        }
    }

    // MARK: Records and stats

    func record(_ notification: RecordedNotification) {
        data.withLock { d in
            d.stats.accepted += 1
            if d.recorded.count >= configuration.recordLimit { d.recorded.removeFirst() }
            d.recorded.append(notification)
        }
    }

    func countRejection(_ reason: String) {
        data.withLock { d in
            d.stats.rejected += 1
            d.stats.reasons[reason, default: 0] += 1
        }
    }

    func connectionOpened() { data.withLock { $0.stats.connectionsOpened += 1; $0.stats.connectionsOpen += 1 } }
    func connectionClosed() { data.withLock { $0.stats.connectionsOpen -= 1 } }
    func streamStarted() { data.withLock { $0.stats.streams += 1 } }

    var stats: SimulatorStats {
        data.withLock { d in
            var s = d.stats
            s.recorded = d.recorded.count
            return s
        }
    }

    func notifications(token: String?) -> [RecordedNotification] {
        data.withLock { d in
            guard let token = token?.lowercased() else { return Array(d.recorded) }
            return d.recorded.filter { $0.token == token }
        }
    }

    /// Forgets notifications, faults and counters (connections stay open).
    func reset() {
        data.withLock { d in
            let (open, environments) = (d.stats.connectionsOpen, d.environments)
            d = Data()
            // Devices keep their tokens across a reset, as they do across an outage.
            (d.stats.connectionsOpen, d.environments) = (open, environments)
        }
    }
}
