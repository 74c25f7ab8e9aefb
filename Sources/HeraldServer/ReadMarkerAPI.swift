import HeraldCore
public import HeraldDelivery
import HeraldPushCore
import HTTPTypes
public import Hummingbird

/// `POST /v1/push/read` (SPEC §15): a device's read marker, under its app's registration proof;
/// the identity's other devices get a dismissal.
public struct ReadMarkerAPI: Sendable {
    public let markers: ReadMarkers
    public let configuration: APIConfiguration

    public init(markers: ReadMarkers, configuration: APIConfiguration) {
        self.markers = markers
        self.configuration = configuration
    }

    struct Body: Decodable {
        var app: String?
        var device_token: String?
        var conversation: String?
        var up_to: String?
        var issued_at: Int64?
        var address: String?
        var signature: String?
    }

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.post("/v1/push/read") { request, _ in try await read(request) }
    }

    func read(_ request: Request) async throws -> Response {
        let body = try await JSONBody.decode(Body.self, from: request, limit: configuration.maximumBodySize)
        let app = try configuration.apps.resolve(body.app)
        let grant = try await configuration.apps.authorizeRegistration(request, for: app, now: markers.clock.now())
        let told = try await markers.mark(
            ReadMarkers.Request(
                deviceToken: body.device_token, conversation: body.conversation, upTo: body.up_to, issuedAt: body.issued_at,
                address: body.address, signature: body.signature),
            app: app.id, grant: grant)
        return RegistrationAPI.json(["accepted": true, "devices": .int(Int64(told))], status: .accepted)
    }
}
