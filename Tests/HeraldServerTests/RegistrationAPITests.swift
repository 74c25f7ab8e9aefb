import Foundation
import HTTPTypes
import HeraldAPNsCore
import HeraldAPNsService
import HeraldCore
import HeraldDelivery
import HeraldFCMService
import HeraldMatrix
import HeraldPushCore
import HeraldServer
import HeraldStore
import Hummingbird
import HummingbirdTesting
import Prometheus
import Testing

let kaspaA = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"
let kaspaZero = "kaspa:qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqkx9awp4e"
let token1 = String(repeating: "ab", count: 32)

/// A live HTTP server with the registration API on a fresh SQLite file.
func withRegistrationServer(
    configure: (inout APIConfiguration) -> Void = { _ in },
    maximumDeliveriesPerRequest: Int = EventPublisher.defaultMaximumDeliveriesPerRequest,
    readiness: [ReadinessCheck] = [], sending: [String: [String: String]] = [:], matrix: MatrixApps? = nil,
    metrics: (HeraldMetrics, PrometheusCollectorRegistry) = HeraldMetrics.prometheus(), templates: EventTemplateRegistry = .builtIn,
    _ body: @Sendable (any TestClientProtocol, SQLiteStore) async throws -> Void
) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-api-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = try SQLiteStore(path: directory.appendingPathComponent("herald.sqlite").path)
    try await store.migrate()
    var configuration = APIConfiguration()
    configuration.apps = .single(AppSettings(id: "default", publishKeys: ["pk"]))
    configure(&configuration)
    let publisher = EventPublisher(
        store: store, apps: configuration.apps, metrics: metrics.0, platforms: matrix == nil ? [.ios] : [.ios, .android, .web],
        pushLimits: builtInPushLimits, templates: templates, maximumDeliveriesPerRequest: maximumDeliveriesPerRequest)
    let readMarkers = ReadMarkers(store: store, apps: configuration.apps, clock: SystemClock(), verifier: configuration.registration.schnorrVerifier)
    let router = Gateway.router(
        store: store, configuration: configuration, publisher: publisher, metrics: metrics, readiness: readiness, sending: sending,
        matrix: matrix, readMarkers: readMarkers)
    try await Application(router: router).test(.live) { client in try await body(client, store) }
}

/// The built-in services' publish-time limits, as `herald serve` checks them: Apple's and FCM's.
let builtInPushLimits: [any PushLimits] = [APNsPushLimits(), FCMPushLimits()]

func json(_ response: TestResponse) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any])
}

func send(_ client: any TestClientProtocol, _ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil,
          headers: HTTPFields = [.contentType: "application/json"]) async throws -> TestResponse {
    try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
}

@Suite("/v1/push: the reference's exact shapes", .serialized)
struct RegistrationShapeTests {
    @Test("register, status, re-register, update, unregister")
    func flow() async throws {
        try await withRegistrationServer { client, _ in
            var r = try await send(client, .post, "/v1/push/register",
                #"{"device_token":"\#(token1.uppercased())","platform":"ios","watched_addresses":["\#(kaspaA)","\#(kaspaZero)"]}"#)
            #expect(r.status == .ok)
            #expect(String(buffer: r.body) == #"{"registered":true,"watched_addresses":2}"#)

            let before = Int(Date().timeIntervalSince1970)
            r = try await send(client, .get, "/v1/push/status?device_token=\(token1)")
            let after = Int(Date().timeIntervalSince1970)
            var status = try json(r)
            #expect(status["registered"] as? Bool == true)
            #expect(status["watched_addresses"] as? [String] == [kaspaA, kaspaZero].sorted())
            // The status read marks the device seen.
            let lastSeen = try #require(status["last_seen"] as? Int)
            #expect(lastSeen >= before && lastSeen <= after)

            // Re-registering replaces the watch set.
            r = try await send(client, .post, "/v1/push/register",
                #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["\#(kaspaZero)"]}"#)
            #expect(String(buffer: r.body) == #"{"registered":true,"watched_addresses":1}"#)
            status = try json(try await send(client, .get, "/v1/push/status?device_token=\(token1)"))
            #expect(status["watched_addresses"] as? [String] == [kaspaZero])
            // The token may come in a header instead, out of access logs.
            status = try json(try await send(client, .get, "/v1/push/status", headers: [HTTPField.Name("X-Device-Token")!: token1]))
            #expect(status["registered"] as? Bool == true && status["watched_addresses"] as? [String] == [kaspaZero])
            // Both given: the header wins.
            status = try json(try await send(client, .get, "/v1/push/status?device_token=\(String(repeating: "cd", count: 32))", headers: [HTTPField.Name("X-Device-Token")!: token1]))
            #expect(status["registered"] as? Bool == true)

            r = try await send(client, .put, "/v1/push/update", #"{"device_token":"\#(token1)","watched_addresses":["\#(kaspaA)"]}"#)
            #expect(r.status == .ok)
            #expect(String(buffer: r.body) == #"{"updated":true,"watched_addresses":1}"#)
            r = try await send(client, .put, "/v1/push/update", #"{"device_token":"\#(String(repeating: "cd", count: 32))","watched_addresses":[]}"#)
            #expect(r.status == .notFound)
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "device_token")

            r = try await send(client, .delete, "/v1/push/unregister", #"{"device_token":"\#(token1)"}"#)
            #expect(String(buffer: r.body) == #"{"unregistered":true}"#)
            r = try await send(client, .delete, "/v1/push/unregister", #"{"device_token":"\#(token1)"}"#)
            #expect(r.status == .ok)
            #expect(String(buffer: r.body) == #"{"unregistered":false}"#)
            status = try json(try await send(client, .get, "/v1/push/status?device_token=\(token1)"))
            #expect(status["registered"] as? Bool == false)
        }
    }

    @Test("an Android device registers an FCM token or, with token_kind fid, a Firebase Installation ID; the store keeps which")
    func tokenKinds() async throws {
        try await withRegistrationServer { client, store in
            let fid = "cXyZ0123456789_-abcdeF", fcm = "fcm-token_1:" + String(repeating: "A", count: 140)
            var r = try await send(client, .post, "/v1/push/register",
                #"{"device_token":"\#(fid)","platform":"android","token_kind":"fid","watched_addresses":["session:s1"]}"#)
            #expect(r.status == .ok)
            r = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(fcm)","platform":"android","watched_addresses":["session:s1"]}"#)
            #expect(r.status == .ok)
            // Status keeps the shape of docs/api.md: {registered, watched_addresses, last_seen}.
            let status = try json(try await send(client, .get, "/v1/push/status?device_token=\(fid)"))
            #expect(Set(status.keys) == ["registered", "watched_addresses", "last_seen"] && status["registered"] as? Bool == true)
            #expect(try await store.devices(app: "default", watching: "session:s1").map(\.attributes.tokenKind).sorted { $0.rawValue < $1.rawValue } == [.fid, .token])
        }
    }

    @Test("own addresses and contextual routes are stored with the watch set")
    func kasiaFields() async throws {
        try await withRegistrationServer { client, store in
            let r = try await send(client, .post, "/v1/push/register", #"""
                {"device_token":"\#(token1)","platform":"ios","watched_addresses":["\#(kaspaZero)"],"addresses":["\#(kaspaA)"],
                 "contextual_routes":[{"peer_address":"\#(kaspaZero)","aliases":["abc","def"]}],"environment":"production","device_id":"phone-1"}
                """#)
            #expect(r.status == .ok)
            let (device, set) = try #require(try await store.status(app: "default", token: token1, now: Date()))
            #expect(device.attributes.apnsEnvironment == .production && device.deviceID == "phone-1")
            #expect(set.own.map(\.string) == [kaspaA])
            #expect(set.routes.first?.value == ["abc", "def"])
        }
    }
}

struct BadRequest: Sendable, CustomTestStringConvertible {
    var name: String
    var method: HTTPRequest.Method
    var uri: String
    var body: String?
    var headers: HTTPFields
    var status: HTTPResponse.Status
    var field: String?
    var testDescription: String { "\(name) → \(status.code) \(field ?? "-")" }

    /// A `POST /v1/push/register`.
    init(_ name: String, _ body: String?, headers: HTTPFields = [.contentType: "application/json"],
         _ status: HTTPResponse.Status = .badRequest, field: String?) {
        self.init(name, .post, "/v1/push/register", body, headers: headers, status, field: field)
    }

    init(_ name: String, _ method: HTTPRequest.Method, _ uri: String, _ body: String?,
         headers: HTTPFields = [.contentType: "application/json"], _ status: HTTPResponse.Status = .badRequest, field: String?) {
        self.name = name
        self.method = method
        self.uri = uri
        self.body = body
        self.headers = headers
        self.status = status
        self.field = field
    }
}

let badKaspa = String(kaspaA.dropLast()) + "q"
let tooManyKeys = (0..<1_001).map { #""session:s\#($0)""# }.joined(separator: ",")
let tooManyAliases = (0..<101).map { #""a\#($0)""# }.joined(separator: ",")

let badRegistrationRequests: [BadRequest] = [
    BadRequest("not JSON", "{oops", field: "body"),
    BadRequest("empty body", "", field: "body"),
    BadRequest("array body", "[]", field: "body"),
    BadRequest("token a number", #"{"device_token":42,"platform":"ios","watched_addresses":[]}"#, field: "device_token"),
    BadRequest("token missing", #"{"platform":"ios","watched_addresses":[]}"#, field: "device_token"),
    BadRequest("token not hex", #"{"device_token":"\#(String(repeating: "zz", count: 32))","platform":"ios","watched_addresses":[]}"#, field: "device_token"),
    BadRequest("token too short", #"{"device_token":"abcd","platform":"ios","watched_addresses":[]}"#, field: "device_token"),
    BadRequest("platform missing", #"{"device_token":"\#(token1)","watched_addresses":[]}"#, field: "platform"),
    BadRequest("unknown platform", #"{"device_token":"\#(token1)","platform":"windows","watched_addresses":[]}"#, field: "platform"),
    BadRequest("watched_addresses missing", #"{"device_token":"\#(token1)","platform":"ios"}"#, field: "watched_addresses"),
    BadRequest("watched_addresses a string", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":"kaspa:x"}"#, field: "watched_addresses"),
    BadRequest("a number among addresses", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["\#(kaspaA)",7]}"#, field: "watched_addresses[1]"),
    BadRequest("bad Kaspa checksum", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["\#(kaspaA)","\#(badKaspa)"]}"#, field: "watched_addresses[1]"),
    BadRequest("uppercase Kaspa address", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["\#(kaspaA.uppercased())"]}"#, field: "watched_addresses[0]"),
    BadRequest("unknown key kind", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["group:x"]}"#, field: "watched_addresses[0]"),
    BadRequest("too many watch keys", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[\#(tooManyKeys)]}"#, field: "watched_addresses"),
    BadRequest("bad own address", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[],"addresses":["\#(badKaspa)"]}"#, field: "addresses[0]"),
    BadRequest("route without peer", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[],"contextual_routes":[{"aliases":["a"]}]}"#, field: "contextual_routes[0].peer_address"),
    BadRequest("route with bad peer", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[],"contextual_routes":[{"peer_address":"\#(badKaspa)","aliases":["a"]}]}"#, field: "contextual_routes[0].peer_address"),
    BadRequest("too many aliases", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[],"contextual_routes":[{"peer_address":"\#(kaspaA)","aliases":[\#(tooManyAliases)]}]}"#, field: "contextual_routes[0].aliases"),
    BadRequest("alias with a colon", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[],"contextual_routes":[{"peer_address":"\#(kaspaA)","aliases":["a:b"]}]}"#, field: "contextual_routes[0].aliases"),
    BadRequest("unknown token kind", #"{"device_token":"\#(token1)","platform":"android","token_kind":"gcm","watched_addresses":[]}"#, field: "token_kind"),
    BadRequest("an installation id for iOS", #"{"device_token":"\#(token1)","platform":"ios","token_kind":"fid","watched_addresses":[]}"#, field: "token_kind"),
    BadRequest("an installation id of the wrong length", #"{"device_token":"cXyZ0123456789","platform":"android","token_kind":"fid","watched_addresses":[]}"#, field: "device_token"),
    BadRequest("an installation id with a slash", #"{"device_token":"cXyZ0123456789/-abcdeF","platform":"android","token_kind":"fid","watched_addresses":[]}"#, field: "device_token"),
    BadRequest("unknown environment", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[],"environment":"staging"}"#, field: "environment"),
    BadRequest("device_id too long", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[],"device_id":"\#(String(repeating: "d", count: 257))"}"#, field: "device_id"),
    BadRequest("device_id with a NUL", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[],"device_id":"alice\u0000bob"}"#, field: "device_id"),
    BadRequest("environment null", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[],"environment":7}"#, field: "environment"),
    BadRequest("body over 64 KiB", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[],"pad":"\#(String(repeating: "x", count: 70_000))"}"#, .contentTooLarge, field: nil),
    BadRequest("not JSON content type", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[]}"#, headers: [.contentType: "text/plain"], .unsupportedMediaType, field: nil),
    BadRequest("no content type (a cross-site form post)", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[]}"#, headers: [:], .unsupportedMediaType, field: nil),
    BadRequest("update without token", .put, "/v1/push/update", #"{"watched_addresses":[]}"#, field: "device_token"),
    BadRequest("update with a bad address", .put, "/v1/push/update", #"{"device_token":"\#(token1)","watched_addresses":["\#(badKaspa)"]}"#, field: "watched_addresses[0]"),
    BadRequest("unregister without token", .delete, "/v1/push/unregister", #"{}"#, field: "device_token"),
    BadRequest("status without token", .get, "/v1/push/status", nil, .unprocessableContent, field: "device_token"),
    BadRequest("an app this instance does not serve", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[],"app":"other"}"#, field: "app"),
    BadRequest("app name too long", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[],"app":"\#(String(repeating: "a", count: 65))"}"#, field: "app"),
]

@Suite("/v1/push: bad input is refused, names the field, and changes nothing", .serialized)
struct RegistrationBadInputTests {
    @Test("malformed requests", arguments: badRegistrationRequests)
    func refused(request: BadRequest) async throws {
        #expect(badRegistrationRequests.count >= 30)
        try await withRegistrationServer { client, store in
            // A registered device whose state must not move.
            _ = try await send(client, .post, "/v1/push/register",
                #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["\#(kaspaZero)"]}"#)
            let before = try await store.status(app: "default", token: token1, now: Date.distantPast)
            let r = try await send(client, request.method, request.uri, request.body, headers: request.headers)
            #expect(r.status == request.status)
            let error = try #require(try json(r)["error"] as? [String: Any])
            #expect(error["code"] is String && error["message"] is String)
            #expect(error["field"] as? String == request.field)
            let after = try await store.status(app: "default", token: token1, now: Date.distantPast)
            #expect(after?.1 == before?.1 && after?.0.updatedAt == before?.0.updatedAt)
            #expect(try await store.stats().devices == ["default": ["ios": 1]])
        }
    }

    @Test("registration keys: 401 without or with a wrong bearer, 200 with a right one")
    func registrationKeys() async throws {
        try await withRegistrationServer(configure: { $0.apps = .single(AppSettings(id: "default", publishKeys: ["pk"], registration: .bearer(["k-123"]))) }) { client, store in
            let body = #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[]}"#
            var r = try await send(client, .post, "/v1/push/register", body)
            #expect(r.status == .unauthorized)
            r = try await send(client, .post, "/v1/push/register", body,
                               headers: [.contentType: "application/json", .authorization: "Bearer wrong"])
            #expect(r.status == .unauthorized)
            #expect(try await store.stats().devices.isEmpty)
            r = try await send(client, .post, "/v1/push/register", body,
                               headers: [.contentType: "application/json", .authorization: "Bearer k-123"])
            #expect(r.status == .ok)
        }
    }
}
