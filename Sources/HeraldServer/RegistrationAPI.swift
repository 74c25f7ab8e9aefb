import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldCore
import HeraldDelivery
import HeraldStore
import HeraldWebPush
import HeraldWebPushCore
import HTTPTypes
import Hummingbird
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
    /// 1,000 watch keys per device, 100 aliases per route.
    public var maximumWatchKeys = WatchSet.defaultMaximumKeys
    public var maximumAliases = ContextualRoute.defaultMaximumAliases
    /// The Kaspa network served (`HERALD_KASPA_NETWORK`): addresses of another network are
    /// refused at registration. Nil accepts every network.
    public var kaspaNetwork: KaspaAddress.Prefix?
    /// Checks the wallet policy's signatures (libsecp256k1 where the build has it).
    public var schnorrVerifier: (any SchnorrVerifier)? = RegistrationAPI.defaultVerifier
    /// Web Push: where a subscription's endpoint may lead (the SSRF rule). Nil refuses `platform: "web"`.
    public var webPushGuard: WebPushEndpointGuard?
    /// Each app's VAPID application server key (base64url), served at `GET /v1/push/vapid-public-key`.
    public var vapidPublicKeys: [String: String] = [:]
    /// The web origins whose pages may call the API from a browser (`HERALD_CORS_ORIGINS`).
    public var browserOrigins = BrowserOrigins()
    public init() {}
}

/// The native registration API (the shapes of Kasia's push plan):
/// `POST /v1/push/register`, `PUT /v1/push/update`, `DELETE /v1/push/unregister`, `GET /v1/push/status`.
public struct RegistrationAPI: Sendable {
    public let store: any DeviceRegistry
    public let configuration: APIConfiguration
    public let clock: any HeraldClock

    public init(store: any DeviceRegistry, configuration: APIConfiguration, clock: any HeraldClock = SystemClock()) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
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
    }

    struct RegisterBody: Decodable {
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
        let (app, grant) = try authorized(request, app: body.app)
        try AppDirectory.require(grant, covers: body.device_id, field: "device_id")
        guard let platformText = body.platform else { throw APIError.missing("platform") }
        guard let platform = Platform(rawValue: platformText) else {
            throw APIError.invalid("platform", "platform is ios, android or web")
        }
        var kind = DeviceToken.Kind.token
        if let text = body.token_kind {
            guard let parsed = DeviceToken.Kind(rawValue: text) else { throw APIError.invalid("token_kind", "token_kind is token or fid") }
            guard parsed == .token || platform == .android else { throw APIError.invalid("token_kind", "token_kind fid is for android devices") }
            kind = parsed
        }
        var webKeys: WebPushKeys?
        let token: DeviceToken
        if platform == .web {
            (token, webKeys) = try await webSubscription(body.subscription, deviceToken: body.device_token)
        } else {
            guard body.subscription == nil else { throw APIError.unprocessable("subscription", "subscription is for platform web") }
            token = try Self.deviceToken(body.device_token, platform: platform, kind: kind)
        }
        // Without one named, the app's own: its builds are production or sandbox as it is configured.
        var environment: APNsEnvironment = configuration.apps[app]?.production == true ? .production : .sandbox
        if let text = body.environment {
            guard let parsed = APNsEnvironment(rawValue: text) else {
                throw APIError.invalid("environment", "environment is production or sandbox")
            }
            environment = parsed
        }
        // No control characters: a NUL would end the stored text early, and the device would
        // answer to another id than the one registered.
        if let id = body.device_id, id.isEmpty || id.unicodeScalars.count > 256 || id.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw APIError.invalid("device_id", "device_id is 1 to 256 characters, none of them a control character")
        }
        let watchSet = try self.watchSet(watched: body.watched_addresses, own: body.addresses, routes: body.contextual_routes)
        try Self.requireGranted(body.watched_addresses, by: grant)
        try proveOwnership(body.addresses, app: app, token: token.value)
        // A token registered under one identity moves to another only with that identity's token.
        try await requireOwned(token.value, app: app, grant: grant)
        let registration = Registration(
            app: app, token: token, environment: environment, deviceID: body.device_id, watchSet: watchSet, webKeys: webKeys)
        if let settings = configuration.apps[app] { try await Self.admitDevice(token, app: settings, store: store, field: "device_token") }
        _ = try await store.register(registration, now: clock.now())
        return Self.json(["registered": true, "watched_addresses": .int(Int64(watchSet.watched.count))])
    }

    func update(_ request: Request) async throws -> Response {
        let body = try await JSONBody.decode(UpdateBody.self, from: request, limit: configuration.maximumBodySize)
        let (app, grant) = try authorized(request, app: body.app)
        // A web subscription is named by its endpoint, in `device_token` or as the subscription.
        guard let token = body.device_token ?? body.subscription?.endpoint else { throw APIError.missing("device_token") }
        try await requireOwned(token, app: app, grant: grant)
        let watchSet = try self.watchSet(watched: body.watched_addresses, own: body.addresses, routes: body.contextual_routes)
        try Self.requireGranted(body.watched_addresses, by: grant)
        try proveOwnership(body.addresses, app: app, token: DeviceToken.lookupForm(token))
        guard try await store.updateWatchSet(app: app, token: DeviceToken.lookupForm(token), watchSet: watchSet, now: clock.now()) else {
            throw APIError(.notFound, code: "not_registered", message: "no device with this token", field: "device_token")
        }
        return Self.json(["updated": true, "watched_addresses": .int(Int64(watchSet.watched.count))])
    }

    func unregister(_ request: Request) async throws -> Response {
        let body = try await JSONBody.decode(TokenBody.self, from: request, limit: configuration.maximumBodySize)
        let (app, grant) = try authorized(request, app: body.app)
        guard let token = body.device_token else { throw APIError.missing("device_token") }
        try await requireOwned(token, app: app, grant: grant)
        let removed = try await store.unregister(app: app, token: DeviceToken.lookupForm(token))
        return Self.json(["unregistered": .bool(removed)])
    }

    func status(_ request: Request) async throws -> Response {
        let (app, grant) = try authorized(request, app: request.uri.queryParameters.get("app").map { String($0) })
        // The `X-Device-Token` header keeps the token out of access logs, so it wins when both
        // are given; the query still works alone.
        let header = request.headers[Self.deviceTokenHeader]
        let query = request.uri.queryParameters.get("device_token").map { String($0) }
        if header?.isEmpty == true { throw APIError.invalid("X-Device-Token", "X-Device-Token, when given, is not empty") }
        if query?.isEmpty == true { throw APIError.invalid("device_token", "device_token, when given, is not empty") }
        guard let token = header ?? query else {
            throw APIError.unprocessable("device_token", "device_token (or the X-Device-Token header) is required")
        }
        try await requireOwned(token, app: app, grant: grant)
        guard let (device, watchSet) = try await store.status(app: app, token: DeviceToken.lookupForm(token), now: clock.now()) else {
            return Self.json(["registered": false, "watched_addresses": [], "last_seen": .null])
        }
        return Self.json([
            "registered": true,
            "watched_addresses": .array(watchSet.watched.map(\.description).sorted().map(JSONValue.string)),
            "last_seen": .int(Int64(device.lastSeen.timeIntervalSince1970)),
        ])
    }

    static let deviceTokenHeader = HTTPField.Name("X-Device-Token")!

    /// libsecp256k1 where the build links it.
    public static var defaultVerifier: (any SchnorrVerifier)? {
        #if canImport(CSecp256k1)
        LibSecp256k1()
        #else
        nil
        #endif
    }

    // MARK: Validation

    /// The app the request names (or the only one), once its registration policy admits the
    /// request, and what the request may claim.
    private func authorized(_ request: Request, app requested: String?) throws -> (String, RegistrationGrant) {
        let app = try configuration.apps.resolve(requested)
        return (app.id, try configuration.apps.authorizeRegistration(request, for: app, now: clock.now()))
    }

    /// Under a signed policy, a device watches only what its token grants: its own identity's keys
    /// and the `keys` claim's (403 naming the first other one).
    static func requireGranted(_ watched: [String]?, by grant: RegistrationGrant) throws {
        guard grant != .anyIdentity else { return }
        for (i, key) in (watched ?? []).enumerated() where !grant.permitsWatching(key) {
            throw APIError(
                .forbidden, code: "forbidden", message: "the registration token does not grant watching \(key)", field: "watched_addresses[\(i)]")
        }
    }

    /// Under a signed policy, a request may touch a registered token only if the device it
    /// belongs to has the identity its token grants (403 otherwise).
    private func requireOwned(_ token: String, app: String, grant: RegistrationGrant) async throws {
        guard grant != .anyIdentity else { return }
        guard let device = try await store.devices(app: app, tokens: [DeviceToken.lookupForm(token)]).first else { return }
        try AppDirectory.require(grant, covers: device.deviceID, field: "device_token")
    }

    /// A `platform: "web"` registration's subscription: a well-formed https endpoint that leads
    /// outside (the SSRF rule), and its keys. `device_token`, when given too, is the endpoint.
    private func webSubscription(_ subscription: SubscriptionBody?, deviceToken: String?) async throws -> (DeviceToken, WebPushKeys) {
        guard let guardian = configuration.webPushGuard else {
            throw APIError.unprocessable("platform", "this instance has no Web Push (no VAPID key)")
        }
        guard let subscription else { throw APIError.missing("subscription") }
        guard let endpoint = subscription.endpoint else { throw APIError.missing("subscription.endpoint") }
        let token: DeviceToken
        do { token = try DeviceToken(endpoint, platform: .web) } catch { throw APIError.unprocessable("subscription.endpoint", error.description) }
        if let deviceToken, deviceToken != token.value {
            throw APIError.unprocessable("device_token", "device_token, when given, is the subscription's endpoint")
        }
        guard let p256dh = subscription.keys?.p256dh else { throw APIError.missing("subscription.keys.p256dh") }
        guard let auth = subscription.keys?.auth else { throw APIError.missing("subscription.keys.auth") }
        let keys: WebPushKeys
        do {
            keys = try WebPushKeys(p256dh: p256dh, auth: auth)
        } catch {
            throw APIError.unprocessable(error == .p256dh ? "subscription.keys.p256dh" : "subscription.keys.auth", error.description)
        }
        do {
            _ = try await guardian.addresses(for: WebPushEndpoint(token.value))
        } catch .unavailable(let host) {
            // DNS failed for now: the client tries again, as it would after any outage.
            throw APIError(
                .serviceUnavailable, code: "dns_unavailable", message: "the endpoint's host \(host) could not be looked up now",
                field: "subscription.endpoint", retryAfter: 30)
        } catch {
            throw APIError.unprocessable("subscription.endpoint", error.description)
        }
        return (token, keys)
    }

    /// A device token from a body, or 400 naming `field` (every registration route's parsing).
    static func deviceToken(_ text: String?, platform: Platform, kind: DeviceToken.Kind = .token, field: String = "device_token") throws -> DeviceToken {
        guard let text else { throw APIError.missing(field) }
        do {
            return try DeviceToken(text, platform: platform, kind: kind)
        } catch {
            throw APIError.invalid(field, error.description)
        }
    }

    /// The wallet policy: each own address must come with its owner's signature over this
    /// device token, made within the last ten minutes (403 naming `addresses[i]` otherwise).
    private func proveOwnership(_ entries: [AddressEntry]?, app: String, token: String) throws {
        guard case .wallet = configuration.apps[app]?.registration else { return }
        guard let verifier = configuration.schnorrVerifier else {
            throw APIError(.serviceUnavailable, code: "unavailable", message: "this build cannot check Kaspa signatures")
        }
        let tokenHash = Hex.encode(SHA256.hash(data: Array(token.utf8)))
        let now = Int64(clock.now().timeIntervalSince1970)
        for (i, entry) in (entries ?? []).enumerated() {
            let field = "addresses[\(i)]"
            func refuse(_ reason: String) -> APIError { APIError(.forbidden, code: "unproven_address", message: reason, field: field) }
            guard let timestamp = entry.timestamp, let signatureHex = entry.signature else {
                throw refuse("an own address needs its wallet's signature and timestamp under the wallet policy")
            }
            guard (now - Self.proofWindow...now + Self.proofWindow).contains(timestamp) else {
                throw refuse("the signature's timestamp is more than 10 minutes from now")
            }
            guard let signature = Hex.decode(signatureHex), signature.count == 64, let address = try? KaspaAddress(entry.address) else {
                throw refuse("the signature is 64 bytes of hex")
            }
            let message = "herald-register:\(app):\(tokenHash):\(timestamp)"
            guard KaspaMessageSignature.verify(message: message, signature: signature, address: address, verifier: verifier) else {
                throw refuse("the signature is not this address's over this device token")
            }
        }
    }

    /// Refuses (403 `device_limit`) a new token once the app has its `maximumDevices`; a token
    /// already registered may always register again. Registrations racing each other at the
    /// limit may pass it by as many as are in flight.
    static func admitDevice(_ token: DeviceToken, app: AppSettings, store: any DeviceRegistry, field: String) async throws {
        // A known token is the common case and an index lookup; the count runs for new tokens only.
        guard let maximum = app.maximumDevices, try await store.devices(app: app.id, tokens: [token.value]).isEmpty else { return }
        guard try await store.deviceCount(app: app.id) >= maximum else { return }
        throw APIError(.forbidden, code: "device_limit", message: "app \(app.id) has its maximum of \(maximum) devices", field: field)
    }

    /// How far a proof's timestamp may be from now: 10 minutes.
    static let proofWindow: Int64 = 600

    private func watchSet(watched: [String]?, own ownEntries: [AddressEntry]?, routes: [RouteBody]?) throws -> WatchSet {
        let own = ownEntries?.map(\.address)
        guard let watched else { throw APIError.missing("watched_addresses") }
        // Each list past the limit breaks the document's maxItems (400); both together, a rule
        // across fields (422).
        for (field, count) in [("watched_addresses", watched.count), ("addresses", own?.count ?? 0)] where count > configuration.maximumWatchKeys {
            throw APIError.invalid(field, "at most \(configuration.maximumWatchKeys) watch keys per device")
        }
        let total = watched.count + (own?.count ?? 0)
        guard total <= configuration.maximumWatchKeys else {
            throw APIError.unprocessable("watched_addresses", "at most \(configuration.maximumWatchKeys) watch keys per device")
        }
        let keys = try watched.enumerated().map { i, text in
            do { return try WatchKey(text) } catch { throw APIError.invalid("watched_addresses[\(i)]", "\(error)") }
        }
        let addresses = try (own ?? []).enumerated().map { i, text in
            do { return try KaspaAddress(text) } catch { throw APIError.invalid("addresses[\(i)]", "not a Kaspa address: \(error)") }
        }
        guard (routes?.count ?? 0) <= configuration.maximumWatchKeys else {
            throw APIError.invalid("contextual_routes", "at most \(configuration.maximumWatchKeys) routes per device")
        }
        let parsedRoutes = try (routes ?? []).enumerated().map { i, route in
            guard let peerText = route.peer_address else { throw APIError.missing("contextual_routes[\(i)].peer_address") }
            let peer: KaspaAddress
            do { peer = try KaspaAddress(peerText) } catch {
                throw APIError.invalid("contextual_routes[\(i)].peer_address", "not a Kaspa address: \(error)")
            }
            do {
                return try ContextualRoute(peer: peer, aliases: route.aliases ?? [], maximumAliases: configuration.maximumAliases)
            } catch {
                throw APIError.invalid("contextual_routes[\(i)].aliases", "\(error)")
            }
        }
        if let network = configuration.kaspaNetwork {
            // An address of another network could never be paid or written to on this one.
            func check(_ address: KaspaAddress, _ field: String) throws {
                guard address.prefix == network else {
                    throw APIError.unprocessable(field, "a \(address.prefix.rawValue): address; this instance serves \(network.rawValue): addresses")
                }
            }
            for (i, key) in keys.enumerated() { if case .kaspaAddress(let a) = key { try check(a, "watched_addresses[\(i)]") } }
            for (i, a) in addresses.enumerated() { try check(a, "addresses[\(i)]") }
            for (i, route) in parsedRoutes.enumerated() { try check(route.peer, "contextual_routes[\(i)].peer_address") }
        }
        return try WatchSet(watched: keys, own: addresses, routes: parsedRoutes, maximumKeys: .max)
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
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
