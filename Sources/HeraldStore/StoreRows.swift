import Foundation
import HeraldCore
import HeraldPushCore
import KasiaProtocol

/// What both stores read back from their rows, built in one place.
enum StoreRows {
    /// A device from the `devices` columns in table order (`registered_by` from v12, then
    /// `attributes` from v16, not read here).
    static func device(
        rowID: Int64, app: String, platform: String, token: String, deviceID: String?,
        createdAt: Int64, updatedAt: Int64, lastSeen: Int64, disabledReason: String?, attributes: String
    ) -> DeviceRecord {
        DeviceRecord(
            rowID: rowID, app: app, platform: Platform(platform), token: token,
            attributes: DeviceAttributes(storedForm: attributes), deviceID: deviceID,
            createdAt: Date(milliseconds: createdAt), updatedAt: Date(milliseconds: updatedAt),
            lastSeen: Date(milliseconds: lastSeen), disabledReason: disabledReason)
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
