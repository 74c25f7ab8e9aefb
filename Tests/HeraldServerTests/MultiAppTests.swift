import Foundation
import HeraldAPNs
import HeraldAPNsService
import HeraldAPNsSimulator
import HeraldCore
import HeraldDelivery
import HeraldServer
import HeraldStore
import Hummingbird
import HummingbirdTesting
import Prometheus
import Testing

/// Two apps in one instance: the real router, outbox, APNs clients (one key each), simulator and SQLite.
@Suite("Several apps in one instance", .serialized)
struct MultiAppTests {
    static let alpha = AppSettings(id: "alpha", publishKeys: ["alpha-publisher"])
    static let beta = AppSettings(id: "beta", publishKeys: ["beta-publisher"], registration: .bearer(["beta-registrar"]))
    static let alphaToken = String(repeating: "a1", count: 32)
    static let betaToken = String(repeating: "b2", count: 32)

    static func headers(_ bearer: String? = nil) -> HTTPFields {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        return headers
    }

    static func register(_ token: String, app: String?) -> String {
        #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["session:s"]\#(app.map { #","app":"\#($0)""# } ?? "")}"#
    }

    func field(_ response: TestResponse) throws -> String? {
        (try json(response)["error"] as? [String: Any])?["field"] as? String
    }

    static func event(_ text: String, app: String? = nil) -> String {
        #"{"template":"custom","targets":{"tokens":["\#(alphaToken)","\#(betaToken)"]},"fields":{"aps":{"alert":"\#(text)"}}\#(app.map { #","app":"\#($0)""# } ?? "")}"#
    }

    @Test("each app's pushes carry its own topic and key; keys and policies are per app; a 403 pauses only its app")
    func twoApps() async throws {
        try await OutboxHarness.with(keys: 2) { h in
            var configuration = APIConfiguration()
            configuration.apps = AppDirectory([Self.alpha, Self.beta])
            let (metrics, registry) = HeraldMetrics.prometheus()
            var settings = OutboxSettings()
            settings.credentialsPause = .seconds(60) ... .seconds(60)
            let outbox = Outbox(
                queue: h.store,
                providers: [
                    ("alpha", [APNsPushProvider(client: h.clients[0], topic: "com.example.alpha")]),
                    ("beta", [APNsPushProvider(client: h.clients[1], topic: "com.example.beta")]),
                ],
                settings: settings, metrics: metrics)
            let running = Task { await outbox.run() }
            defer { running.cancel() }
            let publisher = EventPublisher(store: h.store, apps: configuration.apps, outbox: outbox, metrics: metrics, pushLimits: builtInPushLimits)
            let router = Gateway.router(store: h.store, configuration: configuration, publisher: publisher, metrics: (metrics, registry))
            try await Application(router: router).test(.live) { client in
                // Registration: the app is named (several are served); beta's policy wants its key.
                var r = try await send(client, .post, "/v1/push/register", Self.register(Self.alphaToken, app: nil))
                #expect(r.status == .badRequest)
                #expect(try field(r) == "app")
                r = try await send(client, .post, "/v1/push/register", Self.register(Self.alphaToken, app: "gamma"))
                #expect(r.status == .badRequest)
                r = try await send(client, .post, "/v1/push/register", Self.register(Self.alphaToken, app: "alpha"))
                #expect(r.status == .ok)
                r = try await send(client, .post, "/v1/push/register", Self.register(Self.betaToken, app: "beta"))
                #expect(r.status == .unauthorized)
                r = try await send(client, .post, "/v1/push/register", Self.register(Self.betaToken, app: "beta"),
                                   headers: Self.headers("beta-registrar"))
                #expect(r.status == .ok)

                // Publishing: a key publishes to its own app; naming another app is forbidden.
                r = try await send(client, .post, "/v1/events", Self.event("to beta", app: "beta"), headers: Self.headers("alpha-publisher"))
                #expect(r.status == .forbidden)
                #expect(try field(r) == "app")
                r = try await send(client, .post, "/v1/events", Self.event("one"), headers: Self.headers("alpha-publisher"))
                #expect(r.status == .accepted)
                #expect(try json(r)["unknown_tokens"] as? [String] == [Self.betaToken])
                r = try await send(client, .post, "/v1/events", Self.event("one"), headers: Self.headers("beta-publisher"))
                #expect(r.status == .accepted)
                #expect(try json(r)["unknown_tokens"] as? [String] == [Self.alphaToken])
                await h.wait(upTo: .seconds(10)) { h.simulator.notifications().count == 2 }
                let alphaPush = h.simulator.notifications(token: Self.alphaToken)
                let betaPush = h.simulator.notifications(token: Self.betaToken)
                #expect(alphaPush.map(\.topic) == ["com.example.alpha"] && alphaPush.map(\.keyID) == ["OUTBOX0000"])
                #expect(betaPush.map(\.topic) == ["com.example.beta"] && betaPush.map(\.keyID) == ["OUTBOX0001"])

                // APNs now refuses beta's provider token: beta pauses, alpha keeps delivering.
                _ = try h.simulator.inject(SimulatorFault(kind: .respond, token: Self.betaToken, status: 403, reason: "InvalidProviderToken"))
                for n in 2...4 {
                    for key in ["alpha-publisher", "beta-publisher"] {
                        r = try await send(client, .post, "/v1/events", Self.event("n\(n)"), headers: Self.headers(key))
                        #expect(r.status == .accepted)
                    }
                }
                await h.wait(upTo: .seconds(10)) { h.simulator.notifications(token: Self.alphaToken).count == 4 }
                let refused = h.simulator.stats.reasons["InvalidProviderToken"] ?? 0
                try await Task.sleep(for: .milliseconds(500))
                #expect(h.simulator.notifications(token: Self.alphaToken).count == 4)
                #expect(h.simulator.notifications(token: Self.betaToken).count == 1)
                // The refused batch (the events published before it was claimed), then nothing: the lane
                // waits out its pause instead of trying the rest.
                #expect((1...3).contains(refused))
                #expect(h.simulator.stats.reasons["InvalidProviderToken"] == refused)
                let text = String(decoding: registry.emitToBuffer(), as: UTF8.self)
                #expect(text.contains(#"herald_app_sends_paused{app="beta",platform="ios"} 1"#), "\(text)")
                #expect(!text.contains(#"herald_app_sends_paused{app="alpha",platform="ios"} 1"#))
            }
            running.cancel()
            await running.value
        }
    }
}
