import HeraldCore
public import HeraldPushCore
import HeraldWebPushCore

/// How a push service's devices register: by a token its rule checks (`TokenRegistrationRule`),
/// or by something else that brings its own keys (Web Push: a browser's subscription), whose
/// token and kept values the rule reads from the request.
public protocol DeviceRegistrationRule: DeviceTokenRule {
    /// Whether its devices register by a subscription that brings its own keys, instead of a
    /// token (with `push_keys` to seal to).
    var bringsOwnKeys: Bool { get }

    /// The device's token and the values its service keeps of the registration; a `Refusal`
    /// names the field at fault.
    func device(from request: DeviceRegistrar.Request, kind: DeviceToken.Kind) async throws -> (token: DeviceToken, attributes: DeviceAttributes)
}

extension DeviceRegistrationRule {
    public var bringsOwnKeys: Bool { false }

    /// A token's registration: `device_token`, checked by the rule.
    public func device(from request: DeviceRegistrar.Request, kind: DeviceToken.Kind) async throws -> (token: DeviceToken, attributes: DeviceAttributes) {
        guard let text = request.deviceToken else { throw Refusal.missing("device_token") }
        do { return (try token(text, kind: kind), .empty) } catch { throw Refusal.invalid("device_token", error.description) }
    }
}

/// A push service's token rule as registration uses it: devices register by `device_token`.
public struct TokenRegistrationRule: DeviceRegistrationRule {
    public let rule: any DeviceTokenRule

    public init(_ rule: any DeviceTokenRule) { self.rule = rule }

    public var platform: Platform { rule.platform }
    public var tokenKinds: Set<DeviceToken.Kind> { rule.tokenKinds }

    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        try rule.token(text, kind: kind)
    }
}

/// `platform: "web"` on an instance without Web Push (no VAPID key, no SSRF rule): refused.
public struct NoWebPushRule: DeviceRegistrationRule {
    public init() {}
    public var platform: Platform { .web }
    public var bringsOwnKeys: Bool { true }

    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        try WebPushTokenRule().token(text, kind: kind)
    }

    public func device(from request: DeviceRegistrar.Request, kind: DeviceToken.Kind) async throws -> (token: DeviceToken, attributes: DeviceAttributes) {
        throw Refusal.unprocessable("platform", "this instance has no Web Push (no VAPID key)")
    }
}
