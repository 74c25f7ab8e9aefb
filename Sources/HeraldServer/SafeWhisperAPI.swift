import Crypto
import Foundation
import HeraldDelivery
public import HeraldCore
import HeraldPushCore
import HTTPTypes
public import HeraldStore
public import Hummingbird

/// SafeWhisper's device API (`/api/devices/*`), unchanged, on the
/// core registry: `POST /api/devices/token` and `POST /api/devices/logout`, keyed by `X-Device-ID`.
/// Its devices have no watch keys: its backend targets them by device id.
public struct SafeWhisperAPI: Sendable {
    public let store: any DeviceRegistry
    public let configuration: APIConfiguration
    public let clock: any HeraldClock
    let registrar: DeviceRegistrar
    static let deviceHeader = HTTPField.Name("X-Device-ID")!

    public init(store: any DeviceRegistry, configuration: APIConfiguration, clock: any HeraldClock = SystemClock()) {
        self.store = store
        registrar = configuration.registrar(store: store, clock: clock)
        self.configuration = configuration
        self.clock = clock
    }

    struct TokenBody: Decodable {
        var apnsToken: String?
    }

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        for prefix in ["", "/apps/:app"] {
            router.post("\(prefix)/api/devices/token") { request, context in
                try await register(request, app: context.parameters.get("app"))
            }
            router.post("\(prefix)/api/devices/logout") { request, context in
                try await logout(request, app: context.parameters.get("app"))
            }
        }
    }

    /// 201 `{"id": "<uuid>"}`. The token becomes the device's only one (device switch); a token
    /// registered before under another device id moves to this one.
    func register(_ request: Request, app prefix: String?) async throws -> Response {
        let (app, grant) = try await configuration.apps.registeringApp(request, prefix: prefix, now: clock.now())
        let deviceID = try Self.deviceID(request)
        try AppDirectory.require(grant, covers: deviceID, field: "X-Device-ID")
        let body = try await JSONBody.decode(TokenBody.self, from: request, limit: configuration.maximumBodySize)
        let token = try registrar.token(body.apnsToken, platform: .ios, field: "apnsToken")
        let device = try await registrar.register(
            Registration(app: app.id, token: token, attributes: DeviceAttributes(production: app.production), deviceID: deviceID, watchSet: .empty,
                         replacesDeviceTokens: true),
            app: app, grant: grant, field: "apnsToken")
        return RegistrationAPI.json(["id": .string(Self.recordID(app: device.app, token: device.token))], status: .created)
    }

    /// 200: every token of the device is gone.
    func logout(_ request: Request, app prefix: String?) async throws -> Response {
        let (app, grant) = try await configuration.apps.registeringApp(request, prefix: prefix, now: clock.now())
        let deviceID = try Self.deviceID(request)
        try AppDirectory.require(grant, covers: deviceID, field: "X-Device-ID")
        let removed = try await store.unregister(app: app.id, deviceID: deviceID)
        return RegistrationAPI.json(["removed": .int(Int64(removed))])
    }

    static func deviceID(_ request: Request) throws -> String {
        guard let id = request.headers[deviceHeader], !id.isEmpty else { throw APIError.missing("X-Device-ID") }
        guard id.unicodeScalars.count <= 256 else { throw APIError.invalid("X-Device-ID", "X-Device-ID is 1 to 256 characters") }
        return id
    }

    /// A stable UUID for the (app, token) record: the same token answers the same id.
    static func recordID(app: String, token: String) -> String {
        var bytes = Array(SHA256.hash(data: Array("\(app)\u{0}\(token)".utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0f) | 0x50  // version 5-style (name-based)
        bytes[8] = (bytes[8] & 0x3f) | 0x80  // RFC 4122 variant
        let u = (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                 bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15])
        return UUID(uuid: u).uuidString.lowercased()
    }
}
