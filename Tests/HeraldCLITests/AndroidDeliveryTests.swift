import Foundation
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Android through `herald serve` with its built-in FCM simulator (real TLS, HTTP/2, OAuth grant).
@Suite(.serialized) struct AndroidDeliveryTests {
    static let publisher = "publisher-key-00001"

    static func start() throws -> (ServeProcess, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-android-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": publisher, "HERALD_REGISTRATION_RATE": "0",
        ])
        return (serve, directory)
    }

    static func fcmPushes(_ serve: ServeProcess, token: String) async throws -> [[String: Any]] {
        let (_, data) = try await http("GET", try #require(serve.fcmControl) + "/notifications?token=" + token)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
    }

    static func apnsPushes(_ serve: ServeProcess, token: String) async throws -> [[String: Any]] {
        let (_, data) = try await http("GET", serve.control + "/notifications?token=" + token)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
    }

    /// Polls until `condition` holds (60 s at most: three full-jitter retries need at most 7 s,
    /// and a loaded machine is slow, never a failure by itself).
    static func eventually(_ condition: () async throws -> Bool) async throws {
        for _ in 0..<1200 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test("one app, an Android and an iOS device watching one key: each gets its push once, FCM data-only and APNs alert")
    func mixedDevices() async throws {
        let (serve, directory) = try Self.start()
        defer {
            serve.process.kill(SIGTERM)
            try? FileManager.default.removeItem(at: directory)
        }
        let android = "fcm-device_1:" + String(repeating: "A", count: 140)
        let ios = String(repeating: "ab", count: 32)
        for (token, platform) in [(android, "android"), (ios, "ios")] {
            let (status, body) = try await http(
                "POST", serve.api + "/v1/push/register", #"{"device_token":"\#(token)","platform":"\#(platform)","watched_addresses":["session:s1"]}"#)
            #expect(status == 200, "\(String(decoding: body, as: UTF8.self))")
        }
        let (status, body) = try await http(
            "POST", serve.api + "/v1/events",
            #"{"template":"custom","targets":{"keys":["session:s1"]},"fields":{"aps":{"alert":{"title":"Hi","body":"Hello"}},"data":{"room":"r1"}},"collapse_id":"c1"}"#,
            bearer: Self.publisher)
        #expect(status == 202, "\(String(decoding: body, as: UTF8.self))")
        try await Self.eventually {
            let fcm = try await Self.fcmPushes(serve, token: android).count
            let apns = try await Self.apnsPushes(serve, token: ios).count
            return fcm >= 1 && apns >= 1
        }
        try await Task.sleep(for: .milliseconds(300))  // room for a duplicate to show
        let fcm = try await Self.fcmPushes(serve, token: android)
        #expect(fcm.count == 1)
        let data = fcm.first?["data"] as? [String: String]
        #expect(data?["title"] == "Hi")
        #expect(data?["body"] == "Hello")
        #expect(fcm.first?["priority"] as? String == "high")
        #expect(fcm.first?["collapse_key"] as? String == "c1")
        let apns = try await Self.apnsPushes(serve, token: ios)
        #expect(apns.count == 1)
        #expect((apns.first?["payload"] as? String)?.contains(#""alert""#) == true)
    }

    @Test("a token FCM calls UNREGISTERED is removed; an FCM outage delays the others' pushes and loses none")
    func deadTokenAndOutage() async throws {
        let (serve, directory) = try Self.start()
        defer {
            serve.process.kill(SIGTERM)
            try? FileManager.default.removeItem(at: directory)
        }
        let control = try #require(serve.fcmControl)
        let dead = "fcm-dead_" + String(repeating: "D", count: 140)
        let live = "fcm-live_" + String(repeating: "L", count: 140)
        for token in [dead, live] {
            _ = try await http("POST", serve.api + "/v1/push/register", #"{"device_token":"\#(token)","platform":"android","watched_addresses":["session:s2"]}"#)
        }
        _ = try await http("POST", control + "/faults", #"{"kind":"unregistered","token":"\#(dead)"}"#)
        // An outage: the next 3 sends get 503 UNAVAILABLE.
        _ = try await http("POST", control + "/faults", #"{"kind":"unavailable","token":"\#(live)","count":3,"retry_after":0}"#)
        let (status, _) = try await http(
            "POST", serve.api + "/v1/events", #"{"template":"custom","targets":{"keys":["session:s2"]},"fields":{"aps":{"alert":"Hello"}}}"#,
            bearer: Self.publisher)
        #expect(status == 202)
        try await Self.eventually {
            let (_, body) = try await http("GET", serve.api + "/v1/push/status?device_token=" + dead)
            let gone = (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["registered"] as? Bool == false
            let delivered = try await Self.fcmPushes(serve, token: live).count
            return gone && delivered >= 1
        }
        let (_, body) = try await http("GET", serve.api + "/v1/push/status?device_token=" + dead)
        #expect((try JSONSerialization.jsonObject(with: body) as? [String: Any])?["registered"] as? Bool == false, "the dead FCM token is still registered")
        #expect(try await Self.fcmPushes(serve, token: live).count == 1)
        #expect(try await Self.fcmPushes(serve, token: dead).isEmpty)
    }
}
