import Foundation
import HeraldApp
import HeraldPushCore
import HeraldPushService
import HeraldTestSupport
import Logging
import ServiceLifecycle
import Testing

/// A push service added from outside: `RecordingService` and one registry line, nothing else.
@Suite("HeraldApp: a fourth push service")
struct FourthServiceTests {
    static func json(_ data: Data) -> [String: Any] { (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:] }

    /// Runs `herald serve` in process with `RecordingService` added, on a temporary SQLite file;
    /// `body` gets the API's and the admin listener's base URLs.
    static func withFourServices(
        _ recorder: RecordingService, environment: [String: String] = [:], _ body: (_ api: String, _ admin: String) async throws -> Void
    ) async throws {
        let pushServices = PushServiceRegistry(PushServiceRegistry.builtIn.services + [recorder])
        try await HeraldAppTests.withDirectory { directory in
            let settings = try ServeSettings(
                environment: [
                    "HERALD_HTTP_PORT": "0", "HERALD_ADMIN_PORT": "0", "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("h.sqlite").path,
                    "HERALD_PUBLISH_KEYS": "fourth-service-publisher-key",
                ].merging(HeraldAppTests.inProcessShutdown) { $1 }.merging(environment) { $1 }, pushServices: pushServices)
            let (ready, readyContinuation) = AsyncStream.makeStream(of: ListeningAddresses.self)
            try await settings.withStore { store in
                let application = try await buildApplication(settings: settings, store: store, logger: Logger(label: "test")) {
                    readyContinuation.yield($0)
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await application.run() }
                    defer { group.cancelAll() }
                    var iterator = ready.makeAsyncIterator()
                    let addresses = try #require(await iterator.next())
                    try await body("http://127.0.0.1:\(addresses.apiPort)", "http://127.0.0.1:\(addresses.adminPort)")
                    await application.serviceGroup.triggerGracefulShutdown()
                    try await group.waitForAll()
                }
            }
        }
    }

    @Test("one event reaches an iPhone, an Android device, a browser and a device of a fourth service, at its built-in simulator")
    func oneEventFourServices() async throws {
        let recorder = RecordingService()
        try await Self.withFourServices(recorder) { api, adminBase in
                    let admin = adminBase + "/simulators"

                    let ios = String(repeating: "4a", count: 32)
                    let android = "fourth-service_1:" + String(repeating: "F", count: 140)
                    let recorded = "rec-fourth1"
                    for (platform, token) in [("ios", ios), ("android", android), ("recorder", recorded)] {
                        let body = #"{"device_token":"\#(token)","platform":"\#(platform)","watched_addresses":["session:four"]}"#
                        let (status, answer) = try await http("POST", api + "/v1/push/register", body)
                        #expect(status == 200, "\(platform): \(String(decoding: answer, as: UTF8.self))")
                    }
                    // The served document describes its registrations.
                    let document = Self.json(try await http("GET", api + "/openapi.json").1)
                    let registration = ((document["components"] as? [String: Any])?["schemas"] as? [String: Any])?["Registration"] as? [String: Any]
                    let branches = String(decoding: try JSONSerialization.data(withJSONObject: registration?["oneOf"] ?? []), as: UTF8.self)
                    #expect(branches.contains(#""const":"recorder""#) && branches.contains("^rec-[A-Za-z0-9]{1,64}$"), "\(branches)")
                    // The fourth service's token rule is its own.
                    let (refused, refusal) = try await http(
                        "POST", api + "/v1/push/register", #"{"device_token":"rec-!","platform":"recorder","watched_addresses":["session:four"]}"#)
                    #expect(refused == 400)
                    #expect((Self.json(refusal)["error"] as? [String: Any])?["field"] as? String == "device_token", "\(String(decoding: refusal, as: UTF8.self))")
                    // A browser subscribes at the built-in Web Push simulator with the app's VAPID key.
                    let key = try #require(Self.json(try await http("GET", api + "/v1/push/vapid-public-key").1)["public_key"] as? String)
                    let (subscribed, subscriptionBody) = try await http("POST", admin + "/webpush/subscribe", #"{"application_server_key":"\#(key)"}"#)
                    #expect(subscribed == 201)
                    let subscription = String(decoding: subscriptionBody, as: UTF8.self)
                    let endpoint = try #require(Self.json(subscriptionBody)["endpoint"] as? String)
                    let web = #"{"platform":"web","subscription":\#(subscription),"watched_addresses":["session:four"]}"#
                    #expect(try await http("POST", api + "/v1/push/register", web).0 == 200)

                    let event = #"{"template":"custom","targets":{"keys":["session:four"]},"fields":{"aps":{"alert":{"title":"Four","body":"services"}}}}"#
                    #expect(try await http("POST", api + "/v1/events", event, bearer: "fourth-service-publisher-key").0 == 202)

                    let query = endpoint.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? endpoint
                    func notifications(_ path: String) async throws -> [Any] {
                        Self.json(try await http("GET", admin + path).1)["notifications"] as? [Any] ?? []
                    }
                    for path in ["/apns/notifications?token=" + ios, "/fcm/notifications?token=" + android, "/webpush/notifications?endpoint=" + query] {
                        try await eventually { try await !notifications(path).isEmpty }
                        #expect(try await notifications(path).count == 1)
                    }
                    // The app has no recorder label: its push went to the recorder's built-in
                    // simulator, whose control API answers on the admin listener; nothing was "sent".
                    try await eventually { try await !notifications("/recorder/notifications?token=" + recorded).isEmpty }
                    let payloads = try await notifications("/recorder/notifications?token=" + recorded)
                    #expect(payloads.count == 1)
                    #expect((payloads.first as? String)?.contains(#""title":"Four""#) == true, "\(payloads)")
                    #expect(recorder.sent.payloads(to: recorded).isEmpty)
                    // Its shared line counts as its connection.
                    let metrics = String(decoding: try await http("GET", adminBase + "/metrics").1, as: UTF8.self)
                    #expect(metrics.contains(#"herald_provider_connections_open{provider="recorder"} 1.0"#), "\(metrics)")
                    // Its publish-time limit is checked with Apple's: a push Apple takes but the
                    // recorder cannot carry is refused before anything is committed.
                    let long = String(repeating: "x", count: 2_000)
                    let tooLong = #"{"template":"custom","targets":{"keys":["session:four"]},"fields":{"aps":{"alert":"\#(long)"}}}"#
                    let (status, answer) = try await http("POST", api + "/v1/events", tooLong, bearer: "fourth-service-publisher-key")
                    let error = Self.json(answer)["error"] as? [String: Any]
                    #expect(status == 413 && error?["field"] as? String == "fields", "\(String(decoding: answer, as: UTF8.self))")
                    #expect((error?["message"] as? String)?.contains("recorder") == true)
        }
    }

    @Test("an app with the fourth service's settings sends with them, not to the simulator; a setting it refuses stops the start naming it")
    func fourthServiceSettings() async throws {
        let recorder = RecordingService()
        try await Self.withFourServices(recorder, environment: ["HERALD_RECORDER_LABEL": "blue"]) { api, admin in
            let body = #"{"device_token":"rec-labelled","platform":"recorder","watched_addresses":["session:blue"]}"#
            #expect(try await http("POST", api + "/v1/push/register", body).0 == 200)
            let event = #"{"template":"custom","targets":{"keys":["session:blue"]},"fields":{"aps":{"alert":{"title":"Blue","body":"b"}}}}"#
            #expect(try await http("POST", api + "/v1/events", event, bearer: "fourth-service-publisher-key").0 == 202)
            try await eventually { !recorder.sent.payloads(to: "rec-labelled").isEmpty }
            #expect(recorder.sent.payloads(to: "rec-labelled").first?.hasPrefix("blue {") == true, "\(recorder.sent.payloads(to: "rec-labelled"))")
            // No simulator runs for it, and the app says it sends with its settings.
            #expect(try await http("GET", admin + "/simulators/recorder/notifications?token=rec-labelled").0 == 404)
            let ready = Self.json(try await http("GET", admin + "/readyz").1)
            let sending = (ready["apps"] as? [String: Any])?["default"] as? [String: Any]
            #expect(sending?["recorder"] as? String == "credentials" && sending?["ios"] as? String == "simulator", "\(ready)")
        }
        let registry = PushServiceRegistry(PushServiceRegistry.builtIn.services + [recorder])
        #expect(throws: HeraldConfigurationError.self) { try ServeSettings(environment: ["HERALD_RECORDER_LABEL": "blue!"], pushServices: registry) }
        do {
            _ = try ServeSettings(environment: ["HERALD_RECORDER_LABEL": "blue!"], pushServices: registry)
        } catch let error as HeraldConfigurationError {
            #expect(error.field == "HERALD_RECORDER_LABEL")
        }
    }
}
