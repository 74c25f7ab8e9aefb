import Foundation
import HeraldCore
import HeraldDelivery
import HeraldPushCore
import HeraldServer
import HeraldStore
import HeraldWebPush
import HeraldWebPushCore
import HeraldWebPushService
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// `platform: "web"`: a browser's `PushSubscription.toJSON()` as a registration.
@Suite("/v1/push: Web Push subscriptions")
struct WebRegistrationTests {
    /// Names resolve as a test says: push.example.com is public, inside.example.com is not.
    struct Resolver: WebPushHostResolver {
        func addresses(of host: String) async throws -> [[UInt8]] {
            switch host {
            case "push.example.com": [[93, 184, 216, 34]]
            case "inside.example.com": [[192, 168, 1, 10]]
            case "flaky-dns.example.com": throw WebPushLookupFailure()
            default: IPAddressLiteral.bytes(host).map { [$0] } ?? []
            }
        }
    }

    static let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    static let endpoint = "https://push.example.com/wpush/v2/gAAAAABk"

    static func configure(_ configuration: inout APIConfiguration) {
        configuration.registration.tokenRules[.web] = WebPushRegistrationRule(endpointGuard: WebPushEndpointGuard(resolver: Resolver()))
        configuration.vapidPublicKeys = ["default": "BPUBLICKEY"]
    }

    static func body(endpoint: String = endpoint, p256dh: String = p256dh, auth: String = auth, watch: String = "session:w1", extra: String = "") -> String {
        #"{"platform":"web","subscription":{"endpoint":"\#(endpoint)","expirationTime":null,"keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}},"watched_addresses":["\#(watch)"]\#(extra)}"#
    }

    @Test("a subscription registers with its keys stored; the endpoint is its identity: registering it again replaces the watch set")
    func registers() async throws {
        try await withRegistrationServer(configure: Self.configure) { client, store in
            var r = try await send(client, .post, "/v1/push/register", Self.body())
            #expect(r.status == .ok, "\(String(buffer: r.body))")
            r = try await send(client, .post, "/v1/push/register", Self.body(watch: "session:w2"))
            #expect(r.status == .ok)
            let devices = try await store.devices(app: "default", tokens: [Self.endpoint])
            #expect(devices.count == 1)
            #expect(devices.first?.platform == .web)
            #expect(devices.first?.attributes.webPushKeys == (try WebPushKeys(p256dh: Self.p256dh, auth: Self.auth)))
            #expect(try await store.devices(app: "default", watching: "session:w1").isEmpty)
            #expect(try await store.devices(app: "default", watching: "session:w2").count == 1)
            // Update and unregister name the subscription by its endpoint.
            r = try await send(client, .put, "/v1/push/update", #"{"subscription":{"endpoint":"\#(Self.endpoint)"},"watched_addresses":["session:w3"]}"#)
            #expect(r.status == .ok, "\(String(buffer: r.body))")
            #expect(try await store.devices(app: "default", watching: "session:w3").count == 1)
            r = try await send(client, .delete, "/v1/push/unregister", #"{"device_token":"\#(Self.endpoint)"}"#)
            #expect(String(buffer: r.body) == #"{"unregistered":true}"#)
        }
    }

    struct Refusal: Sendable, CustomTestStringConvertible {
        var body: String
        var field: String
        /// 400 when the document's form is broken (a missing field), else 422: the endpoint or keys
        /// are refused on what they are, or the subscription does not fit the platform.
        var status: HTTPResponse.Status = .unprocessableContent
        var testDescription: String { field }
    }

    static let refusals: [Refusal] = [
        Refusal(body: #"{"platform":"web","watched_addresses":["session:w"]}"#, field: "subscription", status: .badRequest),
        Refusal(body: body(endpoint: "http://push.example.com/x"), field: "subscription.endpoint"),
        Refusal(body: body(endpoint: "https://inside.example.com/x"), field: "subscription.endpoint"),
        Refusal(body: body(endpoint: "https://127.0.0.1:8443/x"), field: "subscription.endpoint"),
        Refusal(body: body(endpoint: "https://[::ffff:10.0.0.1]/x"), field: "subscription.endpoint"),
        Refusal(body: body(endpoint: "https://nowhere.example.com/x"), field: "subscription.endpoint"),
        // DNS that fails for now is not a refusal of the endpoint: 503, try again.
        Refusal(body: body(endpoint: "https://flaky-dns.example.com/x"), field: "subscription.endpoint", status: .serviceUnavailable),
        Refusal(body: body(p256dh: String(p256dh.dropLast(2))), field: "subscription.keys.p256dh"),
        Refusal(body: body(auth: auth + "=="), field: "subscription.keys.auth"),
        Refusal(body: body(extra: #","device_token":"https://push.example.com/other""#), field: "device_token"),
        Refusal(body: #"{"platform":"ios","device_token":"\#(token1)","subscription":{"endpoint":"\#(endpoint)"},"watched_addresses":[]}"#, field: "subscription"),
    ]

    @Test("refused with the field at fault, nothing stored: no subscription, http, an inside address (SSRF), bad keys", arguments: refusals)
    func refused(_ refusal: Refusal) async throws {
        try await withRegistrationServer(configure: Self.configure) { client, store in
            let r = try await send(client, .post, "/v1/push/register", refusal.body)
            #expect(r.status == refusal.status, "\(String(buffer: r.body))")
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == refusal.field, "\(String(buffer: r.body))")
            #expect(try await store.deviceCount(app: "default") == 0)
        }
    }

    @Test("GET /v1/push/vapid-public-key serves the app's application server key; an instance without Web Push refuses web registrations")
    func vapidKey() async throws {
        try await withRegistrationServer(configure: Self.configure) { client, _ in
            let r = try await send(client, .get, "/v1/push/vapid-public-key")
            #expect(String(buffer: r.body) == #"{"app":"default","public_key":"BPUBLICKEY"}"#)
        }
        try await withRegistrationServer { client, _ in
            #expect(try await send(client, .get, "/v1/push/vapid-public-key").status == .notFound)
            let r = try await send(client, .post, "/v1/push/register", Self.body())
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "platform")
        }
    }
}
