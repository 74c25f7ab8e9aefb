import HeraldCore
public import HeraldDelivery
public import HeraldPushCore
public import HeraldWebPush
import HeraldWebPushCore

/// How a browser registers (`platform: "web"`): its `PushSubscription.toJSON()`, whose endpoint is
/// the device's token once it is a well-formed https URL that leads outside (the SSRF rule), and
/// whose keys the device keeps.
public struct WebPushRegistrationRule: DeviceRegistrationRule {
    let endpointGuard: WebPushEndpointGuard

    public init(endpointGuard: WebPushEndpointGuard) {
        self.endpointGuard = endpointGuard
    }

    public var platform: Platform { .web }
    public var bringsOwnKeys: Bool { true }

    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        try WebPushTokenRule().token(text, kind: kind)
    }

    /// The subscription's endpoint and keys; `device_token`, when given too, is the endpoint.
    public func device(from request: DeviceRegistrar.Request, kind: DeviceToken.Kind) async throws -> (token: DeviceToken, attributes: DeviceAttributes) {
        guard let subscription = request.subscription else { throw Refusal.missing("subscription") }
        guard let endpoint = subscription.endpoint else { throw Refusal.missing("subscription.endpoint") }
        let token: DeviceToken
        do { token = try WebPushTokenRule().token(endpoint) } catch { throw Refusal.unprocessable("subscription.endpoint", error.description) }
        if let deviceToken = request.deviceToken, deviceToken != token.value {
            throw Refusal.unprocessable("device_token", "device_token, when given, is the subscription's endpoint")
        }
        guard let p256dh = subscription.p256dh else { throw Refusal.missing("subscription.keys.p256dh") }
        guard let auth = subscription.auth else { throw Refusal.missing("subscription.keys.auth") }
        let keys: WebPushKeys
        do {
            keys = try WebPushKeys(p256dh: p256dh, auth: auth)
        } catch {
            throw Refusal.unprocessable(error == .p256dh ? "subscription.keys.p256dh" : "subscription.keys.auth", error.description)
        }
        do {
            _ = try await endpointGuard.addresses(for: WebPushEndpoint(token.value))
        } catch .unavailable(let host) {
            // DNS failed for now: the client tries again, as it would after any outage.
            throw Refusal(
                .unavailable, code: "dns_unavailable", message: "the endpoint's host \(host) could not be looked up now",
                field: "subscription.endpoint", retryAfter: 30)
        } catch {
            throw Refusal.unprocessable("subscription.endpoint", error.description)
        }
        return (token, DeviceAttributes.empty.setting(webPushKeys: keys))
    }
}
