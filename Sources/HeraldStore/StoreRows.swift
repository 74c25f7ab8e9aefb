import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldWebPushCore
import KasiaProtocol

/// What both stores read back from their rows, built in one place.
enum StoreRows {
    /// A device from the `devices` columns in table order (`registered_by` from v12, then
    /// `attributes` from v16, not read here).
    static func device(
        rowID: Int64, app: String, platform: String, token: String, deviceID: String?,
        createdAt: Int64, updatedAt: Int64, lastSeen: Int64, disabledReason: String?, attributes: String
    ) -> DeviceRecord {
        let attributes = DeviceAttributes(storedForm: attributes)
        return DeviceRecord(
            rowID: rowID, app: app, platform: Platform(platform), token: token,
            environment: attributes.environment, deviceID: deviceID, tokenKind: attributes.tokenKind,
            createdAt: Date(milliseconds: createdAt), updatedAt: Date(milliseconds: updatedAt),
            lastSeen: Date(milliseconds: lastSeen), disabledReason: disabledReason, webKeys: attributes.webKeys)
    }

    /// Watch sets from `watch_keys` rows (device, role, key) and `contextual_routes` rows
    /// (device, peer, alias). Stored keys were validated when registered.
    static func watchSets(
        for rowIDs: [Int64], keys: [(Int64, String, String)], routes routeRows: [(Int64, String, String)]
    ) -> [Int64: WatchSet] {
        var watched: [Int64: [WatchKey]] = [:]
        var own: [Int64: [KaspaAddress]] = [:]
        var routes: [Int64: [KaspaAddress: [String]]] = [:]
        for (id, role, text) in keys {
            if role == "own" {
                if let address = try? KaspaAddress(text) { own[id, default: []].append(address) }
            } else if let key = try? WatchKey(text) {
                watched[id, default: []].append(key)
            }
        }
        for (id, peerText, alias) in routeRows {
            if let peer = try? KaspaAddress(peerText) { routes[id, default: [:]][peer, default: []].append(alias) }
        }
        var out: [Int64: WatchSet] = [:]
        for id in rowIDs {
            let deviceRoutes = (routes[id] ?? [:]).compactMap { try? ContextualRoute(peer: $0.key, aliases: $0.value, maximumAliases: .max) }
            out[id] = try? WatchSet(watched: watched[id] ?? [], own: own[id] ?? [], routes: deviceRoutes, maximumKeys: .max)
        }
        return out
    }
}

/// What a device carries for its push service, kept in the one `attributes` column as a JSON
/// object of strings: `environment` (APNs: production or sandbox), `token_kind` (FCM: `fid`;
/// absent for a plain token), `web_keys` (Web Push: the subscription's keys, `p256dh.auth`).
/// Schema v16 built it from the typed columns it replaced, in this key order, so the stored
/// form of the common devices is one of a few exact strings, read without a JSON parse.
struct DeviceAttributes: Hashable, Sendable {
    var environment: APNsEnvironment
    var tokenKind: DeviceToken.Kind
    var webKeys: WebPushKeys?

    init(environment: APNsEnvironment, tokenKind: DeviceToken.Kind, webKeys: WebPushKeys?) {
        self.environment = environment
        self.tokenKind = tokenKind
        self.webKeys = webKeys
    }

    /// The stored form: keys in a fixed order, values without characters JSON would escape
    /// (the environment and kind are enum names, the keys base64url).
    var storedForm: String {
        var text = #"{"environment":""# + environment.rawValue + #"""#
        if tokenKind != .token { text += #","token_kind":""# + tokenKind.rawValue + #"""# }
        if let webKeys { text += #","web_keys":""# + webKeys.storedForm + #"""# }
        return text + "}"
    }

    /// Reads the stored form; what is missing or unreadable takes the defaults (sandbox, a plain
    /// token, no keys), as the typed columns' readers did.
    init(storedForm text: String) {
        switch text {
        case #"{"environment":"sandbox"}"#: self.init(environment: .sandbox, tokenKind: .token, webKeys: nil)
        case #"{"environment":"production"}"#: self.init(environment: .production, tokenKind: .token, webKeys: nil)
        default:
            let fields = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
            self.init(
                environment: (fields["environment"] as? String).flatMap(APNsEnvironment.init(rawValue:)) ?? .sandbox,
                tokenKind: (fields["token_kind"] as? String).flatMap(DeviceToken.Kind.init(rawValue:)) ?? .token,
                webKeys: (fields["web_keys"] as? String).flatMap(WebPushKeys.init(storedForm:)))
        }
    }
}
