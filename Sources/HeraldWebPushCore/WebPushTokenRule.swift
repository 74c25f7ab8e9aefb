public import HeraldPushCore

/// A browser's token (`platform: "web"`): its subscription's endpoint, a well-formed https URL
/// (where it leads is the SSRF rule's to check, at registration).
public struct WebPushTokenRule: DeviceTokenRule {
    public init() {}
    public var platform: Platform { .web }

    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        guard kind == .token else { throw .refused("token_kind fid is for android devices") }
        do { _ = try WebPushEndpoint(text) } catch { throw .refused(error.description) }
        return DeviceToken(checked: text, platform: .web)
    }
}
