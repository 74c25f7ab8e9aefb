public import HeraldPushCore

/// Google's device tokens (`platform: "android"`): a registration token (1 to 4,096 printable
/// ASCII characters) or a Firebase Installation ID (22 base64url characters), kept as given.
public struct FCMTokenRule: DeviceTokenRule {
    /// The longest registration token accepted.
    public static let maximumLength = 4_096
    /// A Firebase Installation ID's length.
    public static let installationIDLength = 22

    public init() {}
    public var platform: Platform { .android }
    public var tokenKinds: Set<DeviceToken.Kind> { [.token, .fid] }

    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        switch kind {
        case .token:
            guard !text.isEmpty, text.utf8.count <= Self.maximumLength, text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7f }) else {
                throw .refused("an FCM token is 1 to \(Self.maximumLength) printable ASCII characters")
            }
        case .fid:
            guard text.utf8.count == Self.installationIDLength, text.utf8.allSatisfy(Base64URL.isAlphabet) else {
                throw .refused("a Firebase Installation ID is \(Self.installationIDLength) base64url characters")
            }
        }
        return DeviceToken(checked: text, platform: .android, kind: kind)
    }
}
