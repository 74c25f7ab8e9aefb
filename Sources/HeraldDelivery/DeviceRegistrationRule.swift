import HeraldCore
import HeraldPushCore

/// A push service whose devices register by something other than a bare token (Web Push: a
/// browser's subscription): registration hands it the request and stores the token and the
/// values it gives back, beside the device's environment.
public protocol DeviceRegistrationRule: DeviceTokenRule {
    /// The device's token and the values its service keeps of the registration; a `Refusal`
    /// names the field at fault.
    func device(from request: DeviceRegistrar.Request) async throws -> (token: DeviceToken, attributes: DeviceAttributes)
}

/// `platform: "web"` on an instance without Web Push (no VAPID key, no SSRF rule): refused.
public struct NoWebPushRule: DeviceRegistrationRule {
    public init() {}
    public var platform: Platform { .web }

    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        try DeviceToken(text, platform: .web, kind: kind)
    }

    public func device(from request: DeviceRegistrar.Request) async throws -> (token: DeviceToken, attributes: DeviceAttributes) {
        throw Refusal.unprocessable("platform", "this instance has no Web Push (no VAPID key)")
    }
}
