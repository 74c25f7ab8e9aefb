import Foundation
import HeraldApp
import HeraldPushService
import HeraldTestSupport
import Logging
import ServiceLifecycle
import Testing

/// A push service added from outside: `RecordingService` and one registry line, nothing else.
@Suite("HeraldApp: a fourth push service")
struct FourthServiceTests {
    static func json(_ data: Data) -> [String: Any] { (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:] }

    @Test("one event reaches an iPhone, an Android device, a browser and a device of a fourth service")
    func oneEventFourServices() async throws {
        let recorder = RecordingService()
        let pushServices = PushServiceRegistry(PushServiceRegistry.builtIn.services + [recorder])
        try await HeraldAppTests.withDirectory { directory in
            let settings = try ServeSettings(environment: [
                "HERALD_HTTP_PORT": "0", "HERALD_ADMIN_PORT": "0", "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("h.sqlite").path,
                "HERALD_PUBLISH_KEYS": "fourth-service-publisher-key",
            ])
            let (ready, readyContinuation) = AsyncStream.makeStream(of: ListeningAddresses.self)
            try await settings.withStore(for: pushServices) { store in
                let application = try await buildApplication(settings: settings, pushServices: pushServices, store: store, logger: Logger(label: "test")) {
                    readyContinuation.yield($0)
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await application.run() }
                    defer { group.cancelAll() }
                    var iterator = ready.makeAsyncIterator()
                    let addresses = try #require(await iterator.next())
                    let api = "http://127.0.0.1:\(addresses.apiPort)"
                    let admin = "http://127.0.0.1:\(addresses.adminPort)/simulators"

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
                    try await eventually { !recorder.sent.payloads(to: recorded).isEmpty }
                    let payloads = recorder.sent.payloads(to: recorded)
                    #expect(payloads.count == 1)
                    #expect(payloads.first?.contains(#""title":"Four""#) == true, "\(payloads)")
                    // Its publish-time limit is checked with Apple's: a push Apple takes but the
                    // recorder cannot carry is refused before anything is committed.
                    let long = String(repeating: "x", count: 2_000)
                    let tooLong = #"{"template":"custom","targets":{"keys":["session:four"]},"fields":{"aps":{"alert":"\#(long)"}}}"#
                    let (status, answer) = try await http("POST", api + "/v1/events", tooLong, bearer: "fourth-service-publisher-key")
                    let error = Self.json(answer)["error"] as? [String: Any]
                    #expect(status == 413 && error?["field"] as? String == "fields", "\(String(decoding: answer, as: UTF8.self))")
                    #expect((error?["message"] as? String)?.contains("recorder") == true)
                    await application.serviceGroup.triggerGracefulShutdown()
                    try await group.waitForAll()
                }
            }
        }
    }
}
