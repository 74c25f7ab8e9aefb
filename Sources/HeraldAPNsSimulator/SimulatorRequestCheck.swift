import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldPushCore
import NIOCore
import NIOHPACK

/// A request as the simulator received it.
struct SimulatorRequest {
    var headers: HPACKHeaders
    var body: ByteBuffer
}

/// The checks Apple makes on a request, in Apple's order, before any fault applies.
/// Pure apart from the provider-token check, which `verify` performs.
enum SimulatorRequestCheck {
    /// The headers Apple refuses to see twice.
    static let singleValuedHeaders = [
        "authorization", "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id", "apns-id",
    ]

    struct Accepted {
        var token: String
        var topic: String
        var pushType: PushType
        var priority: Int
        var expiration: Int?
        var collapseID: String?
        var apnsID: String?
        var keyID: String
        var jwt: String
        var issuedAt: Int64
    }

    /// What a connection remembers between requests.
    struct ConnectionContext {
        /// The key id of the first valid provider token: APNs binds a connection to one key.
        var boundKeyID: String?
        /// The provider token last used on the connection and its `iat`.
        var lastToken: (jwt: String, issuedAt: Int64)?
        /// Apple: a connection's token may change at most once per this many seconds.
        var tokenUpdateInterval: Int64
    }

    enum Outcome {
        case accepted(Accepted)
        case rejected(APNsReason)
    }

    /// - Parameters:
    ///   - connection: what this connection has seen.
    ///   - verify: checks a provider token.
    static func check(
        _ request: SimulatorRequest, topics: Set<String>, connection: ConnectionContext,
        verify: (String) -> TokenVerdict
    ) -> Outcome {
        let h = request.headers
        guard h.first(name: ":method") == "POST" else { return .rejected(.methodNotAllowed) }
        guard let path = h.first(name: ":path"), path.hasPrefix("/3/device/") else { return .rejected(.badPath) }
        let token = path.dropFirst("/3/device/".count)
        guard !token.isEmpty else { return .rejected(.missingDeviceToken) }
        for name in singleValuedHeaders where h[canonicalForm: name].count > 1 {
            return .rejected(.duplicateHeaders)
        }

        guard let authorization = h.first(name: "authorization") else { return .rejected(.missingProviderToken) }
        guard authorization.lowercased().hasPrefix("bearer ") else { return .rejected(.invalidProviderToken) }
        let jwt = String(authorization.dropFirst("bearer ".count))
        let keyID: String
        let issuedAt: Int64
        switch verify(jwt) {
        case .rejected(let reason): return .rejected(reason)
        case .valid(let kid, let iat): (keyID, issuedAt) = (kid, iat)
        }
        if let bound = connection.boundKeyID, bound != keyID { return .rejected(.unrelatedKeyIdInToken) }
        if let last = connection.lastToken, last.jwt != jwt, issuedAt - last.issuedAt < connection.tokenUpdateInterval {
            return .rejected(.tooManyProviderTokenUpdates)
        }

        guard let topic = h.first(name: "apns-topic"), !topic.isEmpty else { return .rejected(.missingTopic) }
        if !topics.isEmpty, !topics.contains(Self.bundleID(of: topic)) { return .rejected(.badTopic) }

        var pushType = PushType.alert
        if let value = h.first(name: "apns-push-type") {
            guard let parsed = PushType(rawValue: value) else { return .rejected(.invalidPushType) }
            pushType = parsed
        }
        var priority = pushType == .background ? 5 : 10
        if let value = h.first(name: "apns-priority") {
            guard let parsed = Int(value), [1, 5, 10].contains(parsed) else { return .rejected(.badPriority) }
            priority = parsed
        }
        var expiration: Int?
        if let value = h.first(name: "apns-expiration") {
            guard let parsed = Int(value), parsed >= 0 else { return .rejected(.badExpirationDate) }
            expiration = parsed
        }
        let collapseID = h.first(name: "apns-collapse-id")
        if let collapseID, collapseID.utf8.count > APNsNotification.maximumCollapseIDSize {
            return .rejected(.badCollapseId)
        }
        let apnsID = h.first(name: "apns-id")
        if let apnsID, UUID(uuidString: apnsID) == nil { return .rejected(.badMessageId) }

        guard APNsDeviceToken.isAppleLength(token) else { return .rejected(.badDeviceToken) }
        guard request.body.readableBytes <= pushType.maximumPayloadSize else { return .rejected(.payloadTooLarge) }
        do {
            _ = try APNsPayloadInspector.inspect(request.body)
        } catch {
            return .rejected(.payloadEmpty)
        }
        return .accepted(Accepted(
            token: token.lowercased(), topic: topic, pushType: pushType, priority: priority, expiration: expiration,
            collapseID: collapseID, apnsID: apnsID, keyID: keyID, jwt: jwt, issuedAt: issuedAt))
    }

    /// The bundle id a topic belongs to: suffixed topics (`.voip`, `.complication`, …) count as their app's.
    static func bundleID(of topic: String) -> String {
        for suffix in [".voip-ptt", ".voip", ".complication", ".pushkit.fileprovider", ".push-type.liveactivity", ".location-query"]
        where topic.hasSuffix(suffix) {
            return String(topic.dropLast(suffix.count))
        }
        return topic
    }
}
