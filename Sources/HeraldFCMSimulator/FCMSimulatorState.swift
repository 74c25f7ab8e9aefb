import Foundation
import HeraldFCMCore
import Synchronization

/// A fault the FCM simulator injects: every matching send (or `count` of them) gets Google's
/// error answer for `kind` instead of 200.
public struct FCMSimulatorFault: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable {
        /// 404 UNREGISTERED: the token is dead (it stays dead).
        case unregistered
        /// 403 SENDER_ID_MISMATCH.
        case senderIDMismatch = "sender_id_mismatch"
        /// 429 QUOTA_EXCEEDED for the project (or the device, with `device: true`).
        case quotaExceeded = "quota_exceeded"
        /// 503 UNAVAILABLE.
        case unavailable
        /// 500 INTERNAL.
        case `internal`
        /// 401 UNAUTHENTICATED without an FCM code: the access token is refused.
        case unauthenticated
        /// 403 PERMISSION_DENIED without an FCM code: the project's credentials are refused.
        case permissionDenied = "permission_denied"
        /// 503 from the OAuth token endpoint (Google's outage) for the next `count` grants.
        case tokenEndpointUnavailable = "token_endpoint_unavailable"
    }
    public var kind: Kind
    /// Only this token; nil for every send.
    public var token: String?
    /// How many sends it answers; nil for all until reset.
    public var count: Int?
    /// `Retry-After` seconds on the answer.
    public var retryAfter: Int?
    /// With quota_exceeded: the device's rate, not the project's.
    public var device: Bool?
    /// Only each k-th matching send (a share of dead tokens in a benchmark); such an
    /// `unregistered` fault does not make the token dead for good.
    public var every: Int?

    enum CodingKeys: String, CodingKey {
        case kind, token, count, device, every
        case retryAfter = "retry_after"
    }
}

/// What the FCM simulator counts and records.
public struct FCMSimulatorStats: Codable, Sendable {
    public var accepted = 0
    public var rejected: [String: Int] = [:]
    public var tokenGrants = 0
    public var grantsRefused = 0

    enum CodingKeys: String, CodingKey {
        case accepted, rejected
        case tokenGrants = "token_grants"
        case grantsRefused = "grants_refused"
    }
}

/// One accepted message as the simulator received it.
public struct FCMSimulatorRecord: Codable, Sendable {
    public var token: String
    public var name: String
    public var data: [String: String]
    public var priority: String?
    public var ttl: String?
    public var collapseKey: String?

    enum CodingKeys: String, CodingKey {
        case token, name, data, priority, ttl
        case collapseKey = "collapse_key"
    }
}

final class FCMSimulatorState: Sendable {
    private struct State {
        var accessTokens: [String: (account: String, expires: Date)] = [:]
        var notifications: [String: [FCMSimulatorRecord]] = [:]
        var faults: [Int: FCMSimulatorFault] = [:]
        /// Matching sends seen per fault with `every`.
        var matches: [Int: Int] = [:]
        var nextFault = 0
        var stats = FCMSimulatorStats()
        var sequence = 0
    }
    private let state = Mutex(State())

    func issue(account: String, lifetime: TimeInterval, now: Date) -> String {
        state.withLock { s in
            s.sequence += 1
            let token = "ya29.sim-\(s.sequence)-" + UUID().uuidString.lowercased()
            s.accessTokens[token] = (account, now.addingTimeInterval(lifetime))
            s.stats.tokenGrants += 1
            return token
        }
    }

    func grantRefused() { state.withLock { $0.stats.grantsRefused += 1 } }

    /// The account an access token was issued to, while it is valid.
    func account(ofAccessToken token: String, now: Date) -> String? {
        state.withLock { s in
            guard let entry = s.accessTokens[token], entry.expires > now else { return nil }
            return entry.account
        }
    }

    /// The fault that answers a send to `token`, consuming one of its uses.
    func fault(for token: String) -> FCMSimulatorFault? {
        state.withLock { s in
            let candidates = s.faults.sorted(by: { $0.key < $1.key }).filter {
                $0.value.kind != .tokenEndpointUnavailable && ($0.value.token == nil || $0.value.token == token)
            }
            var chosen: (Int, FCMSimulatorFault)?
            for (id, fault) in candidates {
                if let every = fault.every, every > 1 {
                    s.matches[id, default: 0] += 1
                    if s.matches[id]! % every != 0 { continue }
                }
                chosen = (id, fault)
                break
            }
            guard let (id, fault) = chosen else { return nil }
            if let count = fault.count {
                if count <= 1 { s.faults[id] = nil } else { s.faults[id]?.count = count - 1 }
            }
            return fault
        }
    }

    /// Whether the token endpoint is down for this grant (a `token_endpoint_unavailable` fault, counted down).
    func tokenEndpointDown() -> Bool {
        state.withLock { s in
            guard let (id, fault) = s.faults.sorted(by: { $0.key < $1.key }).first(where: { $0.value.kind == .tokenEndpointUnavailable }) else {
                return false
            }
            if let count = fault.count {
                if count <= 1 { s.faults[id] = nil } else { s.faults[id]?.count = count - 1 }
            }
            return true
        }
    }

    func addFault(_ fault: FCMSimulatorFault) -> Int {
        state.withLock { s in
            s.nextFault += 1
            s.faults[s.nextFault] = fault
            return s.nextFault
        }
    }

    func record(_ record: FCMSimulatorRecord) {
        state.withLock { s in
            s.notifications[record.token, default: []].append(record)
            s.stats.accepted += 1
        }
    }

    func rejected(_ code: String) { state.withLock { $0.stats.rejected[code, default: 0] += 1 } }

    func nextMessageID() -> Int { state.withLock { s in s.sequence += 1; return s.sequence } }

    var stats: FCMSimulatorStats { state.withLock { $0.stats } }

    func notifications(token: String?) -> [FCMSimulatorRecord] {
        state.withLock { s in token.map { s.notifications[$0] ?? [] } ?? s.notifications.values.flatMap { $0 } }
    }

    func reset() {
        state.withLock { s in
            s.notifications = [:]
            s.faults = [:]
            s.matches = [:]
            s.stats = FCMSimulatorStats()
        }
    }
}
