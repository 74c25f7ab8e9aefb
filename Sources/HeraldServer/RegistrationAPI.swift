import Foundation
public import HeraldCore
import HeraldPushCore
public import HeraldDelivery
public import HeraldStore
import HTTPTypes
public import Hummingbird
import KasiaCrypto
import KasiaProtocol

/// Settings of the HTTP API.
public struct APIConfiguration: Sendable {
    /// The apps served, their publisher keys and registration policies.
    public var apps = AppDirectory.single()
    /// Requests per second by client address (registration) and publisher key (events).
    public var rateLimits = RateLimits()
    /// Request bodies: 64 KiB.
    public var maximumBodySize = 65_536
    /// `/v1/events:batch` bodies: 8 MiB. 1,000 events of the largest push (a 4 KiB payload, about
    /// 4.3 KB of JSON each; a Kasia event at its inline-payload limit about 3.8 KB) fit twice over.
    public var maximumBatchBodySize = 8 * 1_048_576
    /// What registrations are held to: watch-key and alias limits, the Kaspa network, the
    /// wallet policy's signature check, the Web Push SSRF rule.
    public var registration = DeviceRegistrar.Rules()
    /// Each app's VAPID application server key (base64url), served at `GET /v1/push/vapid-public-key`.
    public var vapidPublicKeys: [String: String] = [:]
    /// The web origins whose pages may call the API from a browser (`HERALD_CORS_ORIGINS`).
    public var browserOrigins = BrowserOrigins()
    /// The JSON Schema of each added push service's `device_token`, by platform: the served
    /// OpenAPI document's `Registration` gets a branch per platform (the built-in three are in the file).
    public var addedPlatformTokenSchemas: [String: String] = [:]
    public init() {}

    /// The registration use case under these settings.
    public func registrar(store: any DeviceRegistry, clock: any HeraldClock) -> DeviceRegistrar {
        DeviceRegistrar(store: store, apps: apps, rules: registration, clock: clock)
    }
}

/// The native registration API (the shapes of Kasia's push plan):
/// `POST /v1/push/register`, `PUT /v1/push/update`, `DELETE /v1/push/unregister`, `GET /v1/push/status`.
public struct RegistrationAPI: Sendable {
    public let configuration: APIConfiguration
    public let clock: any HeraldClock
    let registrar: DeviceRegistrar

    public init(store: any DeviceRegistry, configuration: APIConfiguration, clock: any HeraldClock = SystemClock()) {
        self.configuration = configuration
        self.clock = clock
        registrar = configuration.registrar(store: store, clock: clock)
    }

    struct RouteBody: Decodable {
        var peer_address: String?
        var aliases: [String]?
    }

    /// One of a device's own addresses: the address alone, or — as the `wallet` policy requires —
    /// `{"address", "timestamp", "signature"}`, the wallet's Kaspa message signature (hex) of
    /// `herald-register:<app>:<SHA-256 of the device token, hex>:<timestamp>`.
    struct AddressEntry: Decodable {
        var address: String
        var timestamp: Int64?
        var signature: String?

        init(from decoder: any Decoder) throws {
            if let text = try? decoder.singleValueContainer().decode(String.self) {
                address = text
                return
            }
            let c = try decoder.container(keyedBy: CodingKeys.self)
            address = try c.decode(String.self, forKey: .address)
            timestamp = try c.decodeIfPresent(Int64.self, forKey: .timestamp)
            signature = try c.decodeIfPresent(String.self, forKey: .signature)
        }

        enum CodingKeys: String, CodingKey { case address, timestamp, signature }
    }

    /// A browser's `PushSubscription.toJSON()` (its `expirationTime` is not used).
    struct SubscriptionBody: Decodable {
        struct Keys: Decodable {
            var p256dh: String?
            var auth: String?
        }
        var endpoint: String?
        var keys: Keys?

        var value: DeviceRegistrar.Subscription {
            DeviceRegistrar.Subscription(endpoint: endpoint, p256dh: keys?.p256dh, auth: keys?.auth)
        }
    }

    struct PushKeysBody: Decodable {
        var p256dh: String?
        var auth: String?
    }

    struct RegisterBody: Decodable {
        var push_keys: PushKeysBody?
        var device_token: String?
        var subscription: SubscriptionBody?
        var platform: String?
        var token_kind: String?
        var watched_addresses: [String]?
        var addresses: [AddressEntry]?
        var contextual_routes: [RouteBody]?
        var environment: String?
        var app: String?
        var device_id: String?

        var request: DeviceRegistrar.Request {
            DeviceRegistrar.Request(
                platform: platform, tokenKind: token_kind, deviceToken: device_token, subscription: subscription.map(\.value),
                environment: environment, deviceID: device_id, watch: RegistrationAPI.watch(watched_addresses, addresses, contextual_routes),
                pushKeys: push_keys.map { DeviceRegistrar.PushKeys(p256dh: $0.p256dh, auth: $0.auth) })
        }
    }

    struct UpdateBody: Decodable {
        var device_token: String?
        var subscription: SubscriptionBody?
        var watched_addresses: [String]?
        var addresses: [AddressEntry]?
        var contextual_routes: [RouteBody]?
        var app: String?
    }

    struct TokenBody: Decodable {
        var device_token: String?
        var app: String?
    }

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.post("/v1/push/register") { request, _ in try await register(request) }
        router.put("/v1/push/update") { request, _ in try await update(request) }
        router.delete("/v1/push/unregister") { request, _ in try await unregister(request) }
        router.get("/v1/push/status") { request, _ in try await status(request) }
        router.get("/v1/push/vapid-public-key") { request, _ in try vapidPublicKey(request) }
        router.get("/v1/push/signing-key") { request, _ in try signingKey(request) }
    }

    /// The app's Ed25519 public key, which every push it sends is signed with (docs/signed-pushes.md).
    func signingKey(_ request: Request) throws -> Response {
        let app = try configuration.apps.resolve(request.uri.queryParameters.get("app").map { String($0) })
        guard let key = app.sealing?.signingKey.publicKeyBase64URL else {
            throw APIError(.notFound, code: "no_signing_key", message: "app \(app.id) signs no pushes", field: "app")
        }
        return Self.json(["app": .string(app.id), "algorithm": "Ed25519", "public_key": .string(key)])
    }

    /// The registration answer's `signing_key`: the key the app pins to check its pushes.
    private func signingKeyMember(_ app: String) -> [String: JSONValue] {
        configuration.apps[app]?.sealing.map { ["signing_key": .string($0.signingKey.publicKeyBase64URL)] } ?? [:]
    }

    /// The app's VAPID application server key, which a web app passes to `pushManager.subscribe`.
    func vapidPublicKey(_ request: Request) throws -> Response {
        let app = try configuration.apps.resolve(request.uri.queryParameters.get("app").map { String($0) })
        guard let key = configuration.vapidPublicKeys[app.id] else {
            throw APIError(.notFound, code: "no_web_push", message: "app \(app.id) has no VAPID key", field: "app")
        }
        return Self.json(["app": .string(app.id), "public_key": .string(key)])
    }

    func register(_ request: Request) async throws -> Response {
        let body = try await JSONBody.decode(RegisterBody.self, from: request, limit: configuration.maximumBodySize)
        let (app, grant) = try await authorized(request, app: body.app)
        let watchSet = try await registrar.register(body.request, app: app, grant: grant)
        return Self.json(["registered": true, "watched_addresses": .int(Int64(watchSet.watched.count))].merging(signingKeyMember(app)) { $1 })
    }

    /// A native registration body (one line of `herald devices import`) as the registrar takes
    /// it, and the app it names; a body that does not decode is refused naming the field.
    public static func registration(json: [UInt8]) throws(Refusal) -> (app: String?, request: DeviceRegistrar.Request) {
        do {
            let body = try JSONDecoder().decode(RegisterBody.self, from: Data(json))
            return (body.app, body.request)
        } catch let error as DecodingError {
            throw Refusal(decoding: error)
        } catch {
            throw Refusal(.malformed, code: "invalid_json", message: "not a JSON object: \(error)", field: "body")
        }
    }

    func update(_ request: Request) async throws -> Response {
        let body = try await JSONBody.decode(UpdateBody.self, from: request, limit: configuration.maximumBodySize)
        let (app, grant) = try await authorized(request, app: body.app)
        let watchSet = try await registrar.update(
            token: body.device_token, subscriptionEndpoint: body.subscription?.endpoint,
            watch: Self.watch(body.watched_addresses, body.addresses, body.contextual_routes), app: app, grant: grant)
        return Self.json(["updated": true, "watched_addresses": .int(Int64(watchSet.watched.count))].merging(signingKeyMember(app)) { $1 })
    }

    func unregister(_ request: Request) async throws -> Response {
        let body = try await JSONBody.decode(TokenBody.self, from: request, limit: configuration.maximumBodySize)
        let (app, grant) = try await authorized(request, app: body.app)
        let removed = try await registrar.unregister(token: body.device_token, app: app, grant: grant)
        return Self.json(["unregistered": .bool(removed)])
    }

    func status(_ request: Request) async throws -> Response {
        let (app, grant) = try await authorized(request, app: request.uri.queryParameters.get("app").map { String($0) })
        // The `X-Device-Token` header keeps the token out of access logs, so it wins when both
        // are given; the query still works alone.
        let header = request.headers[Self.deviceTokenHeader]
        let query = request.uri.queryParameters.get("device_token").map { String($0) }
        if header?.isEmpty == true { throw APIError.invalid("X-Device-Token", "X-Device-Token, when given, is not empty") }
        if query?.isEmpty == true { throw APIError.invalid("device_token", "device_token, when given, is not empty") }
        guard let token = header ?? query else {
            throw APIError.unprocessable("device_token", "device_token (or the X-Device-Token header) is required")
        }
        guard let (device, watchSet) = try await registrar.status(token: token, app: app, grant: grant) else {
            return Self.json(["registered": false, "watched_addresses": [], "last_seen": .null])
        }
        return Self.json([
            "registered": true,
            "watched_addresses": .array(watchSet.watched.map(\.description).sorted().map(JSONValue.string)),
            "last_seen": .int(Int64(device.lastSeen.timeIntervalSince1970)),
        ])
    }

    /// What the body asks the device to watch, as the registrar takes it.
    static func watch(_ watched: [String]?, _ own: [AddressEntry]?, _ routes: [RouteBody]?) -> DeviceRegistrar.WatchRequest {
        DeviceRegistrar.WatchRequest(
            watched: watched,
            own: own?.map { DeviceRegistrar.OwnAddress(address: $0.address, timestamp: $0.timestamp, signature: $0.signature) },
            routes: routes?.map { DeviceRegistrar.Route(peerAddress: $0.peer_address, aliases: $0.aliases) })
    }

    static let deviceTokenHeader = HTTPField.Name("X-Device-Token")!

    // MARK: Validation

    /// The app the request names (or the only one), once its registration policy admits the
    /// request, and what the request may claim.
    private func authorized(_ request: Request, app requested: String?) async throws -> (String, RegistrationGrant) {
        let app = try configuration.apps.resolve(requested)
        return (app.id, try await configuration.apps.authorizeRegistration(request, for: app, now: clock.now()))
    }

    /// An answer's object, its keys sorted (as every answer's are), without `JSONSerialization`:
    /// its bridging to `NSDictionary` cost a /healthz request a sixth of its CPU.
    static func json(_ fields: [String: JSONValue], status: HTTPResponse.Status = .ok) -> Response {
        json(.sortedObject(fields), status: status)
    }

    /// The same answer from a `JSONValue` (fields in the order given): the publish routes' hot
    /// path, where `JSONSerialization` of a dictionary cost more than the rest of the answer.
    static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        json(bytes: value.encoded, status: status)
    }

    private static func json(bytes: some Sequence<UInt8>, status: HTTPResponse.Status) -> Response {
        var headers = HTTPFields()
        // Room for the fields the answer gathers on its way out (its length, the request id):
        // grown one at a time, each field reallocated the list.
        headers.reserveCapacity(4)
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
