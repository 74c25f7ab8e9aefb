public import HeraldPushCore

/// Apple's device tokens (`platform: "ios"`): even-length hex of 64 to 200 characters, stored
/// lowercase; a Firebase Installation ID is not one.
public struct APNsTokenRule: DeviceTokenRule {
    public init() {}
    public var platform: Platform { .ios }

    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        guard kind == .token else { throw .refused("token_kind fid is for android devices") }
        let lower = APNsDeviceToken.lowercased(text)
        guard APNsDeviceToken.isWellFormed(Substring(lower)) else {
            throw .refused("an APNs token is \(APNsDeviceToken.minimumLength)+ hexadecimal characters")
        }
        return DeviceToken(checked: lower, platform: .ios)
    }
}
