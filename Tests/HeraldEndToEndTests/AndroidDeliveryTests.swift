import Foundation
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Android through `herald serve` with its built-in FCM simulator (real TLS, HTTP/2, OAuth grant).
@Suite(.serialized) struct AndroidDeliveryTests {
    static let publisher = "publisher-key-00001"

    static func start(config yaml: ((URL) -> String)? = nil) throws -> (ServeProcess, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-android-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var environment = [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": publisher, "HERALD_REGISTRATION_RATE": "0",
        ]
        if let yaml {
            let path = directory.appendingPathComponent("herald.yaml")
            try Data(yaml(directory).utf8).write(to: path)
            environment = ["HERALD_CONFIG": path.path, "HERALD_REGISTRATION_RATE": "0"]
        }
        return (try ServeProcess(environment: environment), directory)
    }

    /// Runs `body` against a fresh `herald serve`, then stops it and removes its files.
    static func withServe(config yaml: ((URL) -> String)? = nil, _ body: (ServeProcess) async throws -> Void) async throws {
        let (serve, directory) = try start(config: yaml)
        defer {
            serve.process.kill(SIGTERM)
            try? FileManager.default.removeItem(at: directory)
        }
        try await body(serve)
    }

    static func register(_ serve: ServeProcess, _ token: String, platform: String, key: String, app: String? = nil) async throws {
        let appField = app.map { #","app":"\#($0)""# } ?? ""
        let (status, body) = try await http(
            "POST", serve.api + "/v1/push/register",
            #"{"device_token":"\#(token)","platform":"\#(platform)","watched_addresses":["\#(key)"]\#(appField)}"#)
        #expect(status == 200, "\(String(decoding: body, as: UTF8.self))")
    }

    static func publish(_ serve: ServeProcess, key: String, text: String, bearer: String = publisher) async throws {
        let (status, body) = try await http(
            "POST", serve.api + "/v1/events",
            #"{"template":"custom","targets":{"keys":["\#(key)"]},"fields":{"aps":{"alert":"\#(text)"}}}"#, bearer: bearer)
        #expect(status == 202, "\(String(decoding: body, as: UTF8.self))")
    }

    /// The bodies each token received, in order.
    static func received(_ serve: ServeProcess, _ tokens: [String]) async throws -> [String: [String]] {
        var out: [String: [String]] = [:]
        for token in tokens { out[token] = try await fcmPushes(serve, token: token).compactMap { ($0["data"] as? [String: String])?["body"] } }
        return out
    }

    static func fcmStats(_ serve: ServeProcess) async throws -> [String: Any] {
        let (_, data) = try await http("GET", try #require(serve.fcmControl) + "/stats")
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    static func fcmPushes(_ serve: ServeProcess, token: String) async throws -> [[String: Any]] {
        let (_, data) = try await http("GET", try #require(serve.fcmControl) + "/notifications?token=" + token)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
    }

    static func apnsPushes(_ serve: ServeProcess, token: String) async throws -> [[String: Any]] {
        let (_, data) = try await http("GET", serve.control + "/notifications?token=" + token)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
    }

    @Test("one app, an Android and an iOS device watching one key: each gets its push once, FCM data-only and APNs alert")
    func mixedDevices() async throws {
        try await Self.withServe { serve in
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
            try await eventually {
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
    }

    @Test("custom with an fcm data map: Android devices get it verbatim, iOS devices the APNs payload without it")
    func customVerbatimFCMData() async throws {
        try await Self.withServe { serve in
            let android = "fcm-verbatim_1:" + String(repeating: "V", count: 140)
            let ios = String(repeating: "9e", count: 32)
            try await Self.register(serve, android, platform: "android", key: "session:v")
            try await Self.register(serve, ios, platform: "ios", key: "session:v")
            let (status, body) = try await http(
                "POST", serve.api + "/v1/events",
                #"{"template":"custom","targets":{"keys":["session:v"]},"fields":{"aps":{"alert":"Hi"},"data":{"room":"r1"},"fcm":{"data":{"sealed":"b64box","v":"2"}}}}"#,
                bearer: Self.publisher)
            #expect(status == 202, "\(String(decoding: body, as: UTF8.self))")
            try await eventually {
                let fcm = try await Self.fcmPushes(serve, token: android).count
                let apns = try await Self.apnsPushes(serve, token: ios).count
                return fcm >= 1 && apns >= 1
            }
            #expect(try await Self.fcmPushes(serve, token: android).first?["data"] as? [String: String] == ["sealed": "b64box", "v": "2"])
            let payload = try #require(try await Self.apnsPushes(serve, token: ios).first?["payload"] as? String)
            // Its members, not its text: the signature is random base64url, and once held "fcm".
            let object = try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any], "\(payload)")
            #expect(object.keys.sorted() == ["aps", "herald_signature", "room"] && object["room"] as? String == "r1", "\(payload)")
        }
    }

    @Test("a token FCM calls UNREGISTERED is removed; an FCM outage delays the others' pushes and loses none")
    func deadTokenAndOutage() async throws {
        try await Self.withServe { serve in
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
            try await eventually {
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

    @Test("an FCM outage of 30 s: pushes wait, then every one arrives exactly once")
    func thirtySecondOutage() async throws {
        try await Self.withServe { serve in
            let control = try #require(serve.fcmControl)
            let tokens = (1...4).map { "fcm-outage_\($0):" + String(repeating: "O", count: 140) }
            for token in tokens { try await Self.register(serve, token, platform: "android", key: "session:out") }
            // Every send fails with 503 UNAVAILABLE until the outage ends.
            _ = try await http("POST", control + "/faults", #"{"kind":"unavailable"}"#)
            let start = ContinuousClock.now
            for n in 1...3 { try await Self.publish(serve, key: "session:out", text: "m\(n)") }
            try await eventually {
                ((try await Self.fcmStats(serve))["rejected"] as? [String: Int])?["UNAVAILABLE", default: 0] ?? 0 >= 12
            }
            #expect(try await Self.received(serve, tokens).values.allSatisfy(\.isEmpty), "a push got through the outage")
            try await Task.sleep(until: start + .seconds(30))
            // The outage ends (the simulator forgets its faults and what it counted).
            _ = try await http("POST", control + "/reset")
            // Back-off after 30 s of failures is at most 32 s per push (full jitter); two minutes is room.
            try await eventually(seconds: 120) { try await Self.received(serve, tokens).values.allSatisfy { $0.count >= 3 } }
            try await Task.sleep(for: .milliseconds(500))  // room for a duplicate to show
            for (token, bodies) in try await Self.received(serve, tokens) {
                #expect(bodies.sorted() == ["m1", "m2", "m3"], "\(shortToken(token)): \(bodies)")
            }
        }
    }

    @Test("a 429 storm (QUOTA_EXCEEDED for the project): the app's Android sends back off at least 60 s, then every push arrives once")
    func quotaStorm() async throws {
        try await Self.withServe { serve in
            let control = try #require(serve.fcmControl)
            let tokens = (1...4).map { "fcm-storm_\($0):" + String(repeating: "S", count: 140) }
            for token in tokens { try await Self.register(serve, token, platform: "android", key: "session:storm") }
            let ios = String(repeating: "5c", count: 32)
            try await Self.register(serve, ios, platform: "ios", key: "session:storm")
            // A storm: the next 4 sends, whichever the token, get 429 QUOTA_EXCEEDED (no Retry-After).
            _ = try await http("POST", control + "/faults", #"{"kind":"quota_exceeded","count":4}"#)
            func quotaRefusals() async throws -> Int {
                ((try await Self.fcmStats(serve))["rejected"] as? [String: Int])?["QUOTA_EXCEEDED", default: 0] ?? 0
            }
            try await Self.publish(serve, key: "session:storm", text: "q1")
            try await eventually { try await quotaRefusals() == 4 }
            // The project is backing off (at least 60 s): new events wait too, APNs does not.
            for n in 2...3 { try await Self.publish(serve, key: "session:storm", text: "q\(n)") }
            try await eventually { try await Self.apnsPushes(serve, token: ios).count == 3 }
            try await Task.sleep(for: .seconds(3))
            #expect(try await Self.received(serve, tokens).values.allSatisfy(\.isEmpty), "an Android push went out during the back-off")
            try await eventually(seconds: 180) { try await Self.received(serve, tokens).values.allSatisfy { $0.count >= 3 } }
            try await Task.sleep(for: .milliseconds(500))  // room for a duplicate to show
            for (_, bodies) in try await Self.received(serve, tokens) { #expect(bodies.sorted() == ["q1", "q2", "q3"]) }
            // No hot loop: the storm's 4 answers were all the lane spent.
            #expect(try await quotaRefusals() == 4)
            #expect(try await Self.apnsPushes(serve, token: ios).count == 3)
        }
    }

    @Test("an app whose FCM credentials are refused pauses its Android sends alone: its APNs pushes and another app's FCM pushes go on")
    func refusedCredentialsPauseAlone() async throws {
        try await Self.withServe(config: { directory in
            """
            http_port: 0
            database_url: sqlite:\(directory.appendingPathComponent("herald.sqlite").path)
            apps:
              - id: alpha
                publish_keys: [alpha-publisher-0001]
              - id: beta
                publish_keys: [beta-publisher-00001]
            """
        }) { serve in
            let control = try #require(serve.fcmControl)
            let alphaAndroid = "fcm-alpha_1:" + String(repeating: "P", count: 140)
            let betaAndroid = "fcm-beta_1:" + String(repeating: "B", count: 140)
            let alphaIOS = String(repeating: "a1", count: 32)
            try await Self.register(serve, alphaAndroid, platform: "android", key: "session:a", app: "alpha")
            try await Self.register(serve, alphaIOS, platform: "ios", key: "session:a", app: "alpha")
            try await Self.register(serve, betaAndroid, platform: "android", key: "session:b", app: "beta")
            // Alpha's project refuses its (fresh) credentials: 403 PERMISSION_DENIED without an FCM code.
            _ = try await http("POST", control + "/faults", #"{"kind":"permission_denied","token":"\#(alphaAndroid)"}"#)
            try await Self.publish(serve, key: "session:a", text: "to alpha", bearer: "alpha-publisher-0001")
            try await Self.publish(serve, key: "session:b", text: "to beta", bearer: "beta-publisher-00001")
            try await eventually {
                let metrics = String(decoding: try await http("GET", serve.admin + "/metrics").1, as: UTF8.self)
                let apns = try await Self.apnsPushes(serve, token: alphaIOS).count
                let beta = try await Self.fcmPushes(serve, token: betaAndroid).count
                return metrics.contains(#"herald_app_sends_paused{app="alpha",platform="android"} 1"#) && apns == 1 && beta == 1
            }
            let metrics = String(decoding: try await http("GET", serve.admin + "/metrics").1, as: UTF8.self)
            #expect(metrics.contains(#"herald_app_sends_paused{app="alpha",platform="android"} 1"#), "\(metrics)")
            #expect(!metrics.contains(#"herald_app_sends_paused{app="alpha",platform="ios"} 1"#))
            #expect(!metrics.contains(#"herald_app_sends_paused{app="beta",platform="android"} 1"#))
            #expect(try await Self.apnsPushes(serve, token: alphaIOS).count == 1)
            #expect(try await Self.fcmPushes(serve, token: betaAndroid).count == 1)
            #expect(try await Self.fcmPushes(serve, token: alphaAndroid).isEmpty)
            // /readyz tells which lane is paused, and which are sending.
            let (ready, readyBody) = try await http("GET", serve.admin + "/readyz")
            #expect(ready == 200)
            let lanes = (try JSONSerialization.jsonObject(with: readyBody) as? [String: Any])?["lanes"] as? [String: [String: String]]
            #expect(lanes?["alpha"]?["android"] == "paused", "\(String(decoding: readyBody, as: UTF8.self))")
            #expect(lanes?["alpha"]?["ios"] == "sending" && lanes?["beta"]?["android"] == "sending")
            // The token is kept: refused credentials are the app's fault, not the device's.
            let (_, body) = try await http("GET", serve.api + "/v1/push/status?app=alpha&device_token=" + alphaAndroid)
            #expect((try JSONSerialization.jsonObject(with: body) as? [String: Any])?["registered"] as? Bool == true)
        }
    }
}

/// A token's log-safe form in test messages.
private func shortToken(_ token: String) -> String { String(token.prefix(8)) + "…" }
