import Foundation
public import HeraldPushCore
public import KasiaProtocol

/// Kasia's per-peer filter: a device hears a peer's contextual messages only under these aliases.
public struct ContextualRoute: Hashable, Sendable {
    /// Aliases allowed per route by default (configurable).
    public static let defaultMaximumAliases = 100
    public static let maximumAliasLength = 128

    public var peer: KaspaAddress
    public var aliases: Set<String>

    public init(peer: KaspaAddress, aliases: some Sequence<String>, maximumAliases: Int = defaultMaximumAliases)
        throws(WatchSetError)
    {
        let set = Set(aliases)
        guard set.count <= maximumAliases else { throw .tooManyAliases(limit: maximumAliases) }
        for alias in set where alias.isEmpty || alias.unicodeScalars.count > Self.maximumAliasLength || alias.contains(":") {
            throw .invalidAlias(alias)
        }
        self.peer = peer
        self.aliases = set
    }
}

/// What one device listens for: re-registering replaces it whole.
public struct WatchSet: Hashable, Sendable {
    /// Watch keys per device by default (configurable).
    public static let defaultMaximumKeys = 1_000

    /// `watched_addresses` and other watch keys: whose activity the device follows.
    public var watched: Set<WatchKey>
    /// `addresses`: the device's own Kaspa addresses (payments and handshakes to them).
    public var own: Set<KaspaAddress>
    public var routes: [KaspaAddress: Set<String>]

    public init(
        watched: some Sequence<WatchKey>, own: some Sequence<KaspaAddress> = [], routes: [ContextualRoute] = [],
        maximumKeys: Int = defaultMaximumKeys
    ) throws(WatchSetError) {
        let watched = Set(watched)
        let own = Set(own)
        guard watched.count + own.count <= maximumKeys else { throw .tooManyKeys(limit: maximumKeys) }
        self.watched = watched
        self.own = own
        var merged: [KaspaAddress: Set<String>] = [:]
        for route in routes { merged[route.peer, default: []].formUnion(route.aliases) }
        self.routes = merged
    }

    /// An empty watch set.
    public static let empty = try! WatchSet(watched: [WatchKey]())
}

public enum WatchSetError: Error, Hashable, Sendable, CustomStringConvertible {
    case tooManyKeys(limit: Int)
    case tooManyAliases(limit: Int)
    case invalidAlias(String)

    public var description: String {
        switch self {
        case .tooManyKeys(let limit): "at most \(limit) watch keys per device"
        case .tooManyAliases(let limit): "at most \(limit) aliases per contextual route"
        case .invalidAlias: "an alias is 1 to \(ContextualRoute.maximumAliasLength) bytes without ':'"
        }
    }
}

extension DeviceAttributes {
    /// What an Android device's token is (`token_kind`: `fid` for a Firebase Installation ID;
    /// a plain token when absent).
    public var tokenKind: DeviceToken.Kind {
        self["token_kind"].flatMap(DeviceToken.Kind.init(rawValue:)) ?? .token
    }

    /// These attributes with `kind` (a plain token is kept as no value).
    public func setting(tokenKind kind: DeviceToken.Kind) -> DeviceAttributes {
        setting("token_kind", to: kind == .token ? nil : kind.rawValue)
    }
}
