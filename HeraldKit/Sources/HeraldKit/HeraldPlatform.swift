/// The push service a device's token belongs to, as Herald's `platform` names it: Apple's,
/// Google's, a browser's, or a service an instance adds (`HeraldPlatform(rawValue:)`).
public struct HeraldPlatform: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// Apple (APNs): the token is the device token's hex.
    public static let ios = HeraldPlatform(rawValue: "ios")
    /// Google (FCM): a registration token.
    public static let android = HeraldPlatform(rawValue: "android")
    /// A browser or UnifiedPush distributor (Web Push): the subscription's endpoint.
    public static let web = HeraldPlatform(rawValue: "web")

    public var description: String { rawValue }
}
