import Foundation
import HeraldAPNsCore
import HeraldPushCore
import HeraldWebPushCore
import KasiaProtocol

/// A push service's name for its devices (`ios`, `android`, `web`, or a `PushService` of one's
/// own): what registrations say in `platform`, what the store keeps, and what each outbox lane
/// serves.
public struct Platform: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ name: String) { rawValue = name }
    public var description: String { rawValue }

    /// Apple (APNs).
    public static let ios = Platform("ios")
    /// Google (FCM).
    public static let android = Platform("android")
    /// Browsers and UnifiedPush distributors (Web Push): the token is the subscription's endpoint.
    public static let web = Platform("web")
    /// The services Herald is built with, in their registry order.
    public static let builtIn: [Platform] = [.ios, .android, .web]

    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// A device's push token, normalised and checked for its platform.
public struct DeviceToken: Hashable, Sendable, CustomStringConvertible {
    /// The longest FCM token accepted.
    public static let maximumFCMLength = 4_096

    /// What an Android token is: FCM sends to a registration token as `message.token` and to a
    /// Firebase Installation ID as `message.fid`.
    public enum Kind: String, Hashable, Sendable, CaseIterable, Codable {
        /// An APNs device token or an FCM registration token.
        case token
        /// A Firebase Installation ID (22 base64url characters).
        case fid
    }

    public let platform: Platform
    public let kind: Kind
    /// APNs: lowercase hex. FCM: as given. Web Push: the endpoint URL as given.
    public let value: String

    /// A token a push service's own rule has checked (a `PushService` beside the built-in three).
    public init(checked value: String, platform: Platform, kind: Kind = .token) {
        self.value = value
        self.platform = platform
        self.kind = kind
    }

    /// A token of a built-in platform, checked by its rule; any other platform's token comes from
    /// its `PushService`.
    public init(_ text: String, platform: Platform, kind: Kind = .token) throws(DeviceTokenError) {
        switch (platform, kind) {
        case (.ios, .token):
            let lower = text.lowercased()
            guard APNsDeviceToken.isWellFormed(Substring(lower)) else { throw .notAPNsHex }
            value = lower
        case (.ios, .fid), (.web, .fid):
            throw .installationIDNotForIOS
        case (.web, .token):
            do { _ = try WebPushEndpoint(text) } catch { throw .notWebPushEndpoint(error) }
            value = text
        case (.android, .token):
            guard !text.isEmpty, text.utf8.count <= Self.maximumFCMLength,
                text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f })
            else { throw .notFCMToken }
            value = text
        case (.android, .fid):
            guard text.utf8.count == Self.installationIDLength,
                text.utf8.allSatisfy({ $0.isASCIILetterOrDigit || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") })
            else { throw .notInstallationID }
            value = text
        default:
            throw .unknownPlatform(platform)
        }
        self.platform = platform
        self.kind = kind
    }

    /// A Firebase Installation ID's length.
    public static let installationIDLength = 22

    /// Log-safe: the first 8 characters and an ellipsis.
    public var description: String { Self.redacted(value) }

    /// A log-safe form of a token of any platform: its first 8 characters and an ellipsis.
    public static func redacted(_ token: some StringProtocol) -> String { APNsDeviceToken.redacted(token) }

    /// The stored form of a token given without its platform (lookups): APNs tokens are hex and
    /// stored lowercase; anything else (FCM) is case-sensitive and kept as is.
    public static func lookupForm(_ text: String) -> String {
        APNsDeviceToken.isHex(Substring(text)) ? text.lowercased() : text
    }
}

extension UInt8 {
    fileprivate var isASCIILetterOrDigit: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}

public enum DeviceTokenError: Error, Hashable, Sendable, CustomStringConvertible {
    case notAPNsHex, notFCMToken, notInstallationID, installationIDNotForIOS
    case notWebPushEndpoint(WebPushEndpointError)
    /// A platform no push service of this instance serves.
    case unknownPlatform(Platform)
    /// A push service's own rule refused the token.
    case refused(String)
    public var description: String {
        switch self {
        case .notWebPushEndpoint(let error): error.description
        case .unknownPlatform(let platform): "no push service serves platform \(platform)"
        case .refused(let reason): reason
        case .notInstallationID: "a Firebase Installation ID is \(DeviceToken.installationIDLength) base64url characters"
        case .installationIDNotForIOS: "token_kind fid is for android devices"
        case .notAPNsHex: "an APNs token is \(APNsDeviceToken.minimumLength)+ hexadecimal characters"
        case .notFCMToken: "an FCM token is 1 to \(DeviceToken.maximumFCMLength) printable ASCII characters"
        }
    }
}

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

/// A push service's rule for its devices' tokens: what registration checks a token against.
public protocol DeviceTokenRule: Sendable {
    /// The devices the rule is for.
    var platform: Platform { get }
    /// The token `text` names, normalised, or why it is not one of this service's tokens.
    func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken
    /// The kinds of token its devices register with (`token_kind`); a plain token only by default.
    var tokenKinds: Set<DeviceToken.Kind> { get }
}

extension DeviceTokenRule {
    public var tokenKinds: Set<DeviceToken.Kind> { [.token] }
}

/// A built-in platform's token rule (`DeviceToken.init`).
public struct BuiltInTokenRule: DeviceTokenRule {
    public let platform: Platform
    public init(_ platform: Platform) { self.platform = platform }
    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        try DeviceToken(text, platform: platform, kind: kind)
    }

    /// Android devices register a token or a Firebase Installation ID.
    public var tokenKinds: Set<DeviceToken.Kind> { platform == .android ? [.token, .fid] : [.token] }

    /// The rules of `Platform.builtIn`, by platform.
    public static let all: [Platform: any DeviceTokenRule] = Dictionary(uniqueKeysWithValues: Platform.builtIn.map { ($0, BuiltInTokenRule($0)) })
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
