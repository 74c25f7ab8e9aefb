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

/// A device's push token, normalised and checked by its push service's `DeviceTokenRule`.
public struct DeviceToken: Hashable, Sendable, CustomStringConvertible {
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

    /// A token its push service's rule has checked.
    public init(checked value: String, platform: Platform, kind: Kind = .token) {
        self.value = value
        self.platform = platform
        self.kind = kind
    }

    /// Log-safe: the first 8 characters and an ellipsis.
    public var description: String { Self.redacted(value) }

    /// A log-safe form of a token of any platform: its first 8 characters and an ellipsis.
    public static func redacted(_ token: some StringProtocol) -> String { token.prefix(8) + "…" }

    /// The stored form of a token given without its platform (lookups): hex tokens (APNs's) are
    /// stored lowercase; anything else (FCM's, an endpoint) is case-sensitive and kept as is.
    public static func lookupForm(_ text: String) -> String {
        !text.isEmpty && text.utf8.allSatisfy { $0.isHexDigit } ? text.lowercased() : text
    }
}

extension UInt8 {
    /// An ASCII hexadecimal digit, either case.
    @inlinable
    package var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}

/// A push service's rule for its devices' tokens: what registration checks a token against.
/// Each service has its own (`APNsTokenRule`, `FCMTokenRule`, `WebPushTokenRule`, or a `PushService`'s).
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

    /// A plain token `text` names.
    public func token(_ text: String) throws(DeviceTokenError) -> DeviceToken { try token(text, kind: .token) }
}

/// Why a token is not one of its service's.
public enum DeviceTokenError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A platform no push service of this instance serves.
    case unknownPlatform(Platform)
    /// The service's rule refused the token, saying why.
    case refused(String)

    public var description: String {
        switch self {
        case .unknownPlatform(let platform): "no push service serves platform \(platform)"
        case .refused(let reason): reason
        }
    }
}
