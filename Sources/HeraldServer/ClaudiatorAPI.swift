import Foundation
import HeraldDelivery
public import HeraldCore
import HeraldPushCore
public import HeraldStore
public import Hummingbird

/// Claudiator's push registration, unchanged:
/// `POST /api/v1/push/register {platform, token}`, always behind one of the app's registration
/// keys as a bearer (401 without; an app with no keys configured refuses every request).
public struct ClaudiatorAPI: Sendable {
    public let store: any DeviceRegistry
    public let configuration: APIConfiguration
    public let clock: any HeraldClock
    let registrar: DeviceRegistrar

    public init(store: any DeviceRegistry, configuration: APIConfiguration, clock: any HeraldClock = SystemClock()) {
        self.store = store
        registrar = configuration.registrar(store: store, clock: clock)
        self.configuration = configuration
        self.clock = clock
    }

    struct RegisterBody: Decodable {
        var platform: String?
        var token: String?
    }

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        for prefix in ["", "/apps/:app"] {
            router.post("\(prefix)/api/v1/push/register") { request, context in
                try await register(request, app: context.parameters.get("app"))
            }
        }
    }

    func register(_ request: Request, app prefix: String?) async throws -> Response {
        let app = try configuration.apps.compatibilityApp(request, prefix: prefix)
        // Claudiator's app key, or a signed token granting the device token itself; never open.
        let grant: RegistrationGrant
        switch app.registration {
        case .bearer, .signed: grant = try await configuration.apps.authorizeRegistration(request, for: app, now: clock.now())
        case .open, .wallet: throw APIError(.unauthorized, code: "unauthorized", message: "the app key is required as a bearer token")
        }
        let body = try await JSONBody.decode(RegisterBody.self, from: request, limit: configuration.maximumBodySize)
        guard let platformText = body.platform else { throw APIError.missing("platform") }
        let platform = Platform(platformText)
        guard Platform.builtIn.contains(platform) else { throw APIError.invalid("platform", "platform is ios or android") }
        let token = try registrar.token(body.token, platform: platform, field: "token")
        try AppDirectory.require(grant, covers: token.value, field: "token")
        _ = try await registrar.register(
            Registration(app: app.id, token: token, attributes: DeviceAttributes(production: app.production), deviceID: grant.identity, watchSet: .empty),
            app: app, grant: grant, field: "token")
        return RegistrationAPI.json(["registered": true])
    }
}
