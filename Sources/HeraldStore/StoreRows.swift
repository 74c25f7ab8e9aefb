import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldWebPushCore
import KasiaProtocol

/// What both stores read back from their rows, built in one place.
enum StoreRows {
    /// A device from the `devices` columns in table order (`token_kind` from v4, `web_keys` from v6 last).
    static func device(
        rowID: Int64, app: String, platform: String, token: String, environment: String, deviceID: String?,
        createdAt: Int64, updatedAt: Int64, lastSeen: Int64, disabledReason: String?, tokenKind: String, webKeys: String?
    ) -> DeviceRecord {
        DeviceRecord(
            rowID: rowID, app: app, platform: Platform(platform), token: token,
            environment: APNsEnvironment(rawValue: environment) ?? .sandbox, deviceID: deviceID,
            tokenKind: DeviceToken.Kind(rawValue: tokenKind) ?? .token,
            createdAt: Date(milliseconds: createdAt), updatedAt: Date(milliseconds: updatedAt),
            lastSeen: Date(milliseconds: lastSeen), disabledReason: disabledReason,
            webKeys: webKeys.flatMap(WebPushKeys.init(storedForm:)))
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
