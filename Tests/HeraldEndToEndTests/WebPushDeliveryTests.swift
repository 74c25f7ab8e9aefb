import Foundation
import HeraldTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Browsers through `herald serve`: subscriptions from its built-in Web Push simulator (and from
/// a second push service, `herald mock-webpush`), real TLS, VAPID and RFC 8291 encryption.
@Suite(.serialized) struct WebPushDeliveryTests {
    typealias Android = AndroidDeliveryTests

    /// A subscription from a push service's control port, bound to the app's VAPID key as a
    /// browser's `pushManager.subscribe({applicationServerKey})` would be.
    static func subscribe(_ serve: ServeProcess, at control: String) async throws -> [String: Any] {
        let (_, keyBody) = try await http("GET", serve.api + "/v1/push/vapid-public-key")
        let key = try #require((try JSONSerialization.jsonObject(with: keyBody) as? [String: Any])?["public_key"] as? String)
        let (status, body) = try await http("POST", control + "/subscribe", #"{"application_server_key":"\#(key)"}"#)
        #expect(status == 201)
        return try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
    }

    static func register(_ serve: ServeProcess, _ subscription: [String: Any], key: String) async throws {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: subscription), as: UTF8.self)
        let (status, body) = try await http(
            "POST", serve.api + "/v1/push/register", #"{"platform":"web","subscription":\#(json),"watched_addresses":["\#(key)"]}"#)
        #expect(status == 200, "\(String(decoding: body, as: UTF8.self))")
    }

    /// The decrypted messages a push service recorded for a subscription.
    static func received(_ control: String, _ subscription: [String: Any]) async throws -> [[String: Any]] {
        let endpoint = try #require(subscription["endpoint"] as? String)
        let query = endpoint.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? endpoint
        let (_, data) = try await http("GET", control + "/notifications?endpoint=" + query)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
    }

    static func registered(_ serve: ServeProcess, _ subscription: [String: Any]) async throws -> Bool {
        let endpoint = (subscription["endpoint"] as? String) ?? ""
        let query = endpoint.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? endpoint
        let (_, body) = try await http("GET", serve.api + "/v1/push/status?device_token=" + query)
        return (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["registered"] as? Bool == true
    }

    @Test("an iOS device, an Android device and a browser watching one key each get the push once; the browser decrypts what the iOS device got")
    func threePlatforms() async throws {
        try await Android.withServe { serve in
            let web = try #require(serve.webPushControl)
            let ios = String(repeating: "c3", count: 32)
            let android = "fcm-web-mix_1:" + String(repeating: "W", count: 140)
            try await Android.register(serve, ios, platform: "ios", key: "session:three")
            try await Android.register(serve, android, platform: "android", key: "session:three")
            let browser = try await Self.subscribe(serve, at: web)
            try await Self.register(serve, browser, key: "session:three")
            let (status, body) = try await http(
                "POST", serve.api + "/v1/events",
                #"{"template":"custom","targets":{"keys":["session:three"]},"fields":{"aps":{"alert":{"title":"Hi","body":"Hello"}},"data":{"room":"r1"}},"collapse_id":"c1"}"#,
                bearer: Android.publisher)
            #expect(status == 202, "\(String(decoding: body, as: UTF8.self))")
            try await eventually {
                let counts = [
                    try await Android.apnsPushes(serve, token: ios).count, try await Android.fcmPushes(serve, token: android).count,
                    try await Self.received(web, browser).count,
                ]
                return counts.allSatisfy { $0 >= 1 }
            }
            try await Task.sleep(for: .milliseconds(300))  // room for a duplicate to show
            let apns = try await Android.apnsPushes(serve, token: ios)
            let pushes = try await Self.received(web, browser)
            #expect(apns.count == 1)
            #expect(try await Android.fcmPushes(serve, token: android).count == 1)
            #expect(pushes.count == 1)
            // The same document, each with the app's signature attached (signed as each lane sent it).
            let iosPayload = withoutSignature(try #require(apns.first?["payload"] as? String))
            #expect((pushes.first?["plaintext"] as? String).map { withoutSignature($0) } == iosPayload)
            #expect(iosPayload != apns.first?["payload"] as? String, "the iPhone's push carries no signature")
            #expect(iosPayload.contains(#""room":"r1""#))
            #expect(pushes.first?["urgency"] as? String == "high")
            // The collapse id "c1" reaches the push service only as an opaque Topic, and the iPhone
            // (unsealed) as given.
            let topic = try #require(pushes.first?["topic"] as? String)
            #expect(topic.count == 32 && topic != "c1")
            #expect(apns.first?["collapse_id"] as? String == "c1")
        }
    }

    @Test("a subscription its push service calls gone (410) is removed; a 429 storm at one push service delays only that origin's pushes, and loses none")
    func goneAndStorm() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-webpush-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // A second push service, speaking only HTTP/1.1 (the built-in one speaks HTTP/2).
        let second = try MockWebPushProcess(directory: directory, http1Only: true)
        defer { second.process.kill(SIGTERM) }
        var environment = [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": Android.publisher, "HERALD_REGISTRATION_RATE": "0",
        ]
        environment.merge(second.serveEnvironment) { $1 }
        let serve = try ServeProcess(environment: environment)
        defer { serve.process.kill(SIGTERM) }
        let builtIn = try #require(serve.webPushControl)

        let calm = try await Self.subscribe(serve, at: builtIn)
        let dead = try await Self.subscribe(serve, at: builtIn)
        let stormy = try await Self.subscribe(serve, at: second.control)
        for subscription in [calm, dead, stormy] { try await Self.register(serve, subscription, key: "session:storm") }
        _ = try await http("POST", builtIn + "/faults", #"{"kind":"gone","endpoint":"\#(dead["endpoint"] as? String ?? "")"}"#)
        // Every push to the second service is refused with 429 until the storm ends.
        _ = try await http("POST", second.control + "/faults", #"{"kind":"too_many_requests","retry_after":2}"#)

        try await Android.publish(serve, key: "session:storm", text: "m1")
        try await eventually {
            let gone = try await !Self.registered(serve, dead)
            let delivered = try await Self.received(builtIn, calm).count >= 1
            return gone && delivered
        }
        #expect(try await !Self.registered(serve, dead), "the 410 subscription is still registered")
        // The storm holds the second origin's push back; the first origin's next push still goes at once.
        try await Android.publish(serve, key: "session:storm", text: "m2")
        try await eventually { try await Self.received(builtIn, calm).count >= 2 }
        #expect(try await Self.received(builtIn, calm).count == 2)
        #expect(try await Self.received(second.control, stormy).isEmpty, "a push got through the storm")
        let (_, stats) = try await http("GET", second.control + "/stats")
        let rejected = (try JSONSerialization.jsonObject(with: stats) as? [String: Any])?["rejected"] as? [String: Int]
        #expect((rejected?["429 rate"] ?? 0) >= 1)

        // The storm ends: both pushes reach the stormy subscription, once each.
        _ = try await http("POST", second.control + "/reset")
        try await eventually(seconds: 120) { try await Self.received(second.control, stormy).count >= 2 }
        try await Task.sleep(for: .milliseconds(500))  // room for a duplicate to show
        let bodies = try await Self.received(second.control, stormy).compactMap { $0["plaintext"] as? String }
        #expect(bodies.count == 2)
        #expect(bodies.contains { $0.contains("m1") } && bodies.contains { $0.contains("m2") }, "\(bodies)")
        #expect(try await Self.received(builtIn, dead).isEmpty)
    }

    @Test("a hanging push service and one answering 403 are planted: the app's other browsers, iPhones and Android devices get every push, and SIGTERM exits 0")
    func hostileOrigins() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-hostile-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // A push service that accepts TCP and never says a word (the kernel completes the
        // handshake for a listener that never accepts).
        let silent = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(silent) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try #require(withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(silent, $0, length) } } == 0)
        try #require(listen(silent, 64) == 0)
        try #require(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(silent, $0, &length) } } == 0)
        let silentPort = Int(UInt16(bigEndian: address.sin_port))
        // A push service that refuses the app's key for the subscriptions bound to another one (403).
        let refusing = try MockWebPushProcess(directory: directory)
        defer { refusing.process.kill(SIGTERM) }
        let otherKey = try #require(
            try await runProcessOffPool(heraldExecutable(), ["vapid-keys", "--out", directory.appendingPathComponent("other").path]).lastJSONLine["application_server_key"] as? String)
        var environment = [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": Android.publisher, "HERALD_REGISTRATION_RATE": "0",
        ]
        environment.merge(refusing.serveEnvironment) { $1 }
        environment["HERALD_WEBPUSH_ALLOW_HOSTS"]! += ",127.0.0.1:\(silentPort)"
        let serve = try ServeProcess(environment: environment)
        defer { if serve.process.process.isRunning { serve.process.kill(SIGKILL) } }
        let builtIn = try #require(serve.webPushControl)

        let ios = String(repeating: "c4", count: 32)
        let android = "fcm-hostile_1:" + String(repeating: "H", count: 140)
        try await Android.register(serve, ios, platform: "ios", key: "session:hostile")
        try await Android.register(serve, android, platform: "android", key: "session:hostile")
        let calm = try await Self.subscribe(serve, at: builtIn)
        var hanging = try await Self.subscribe(serve, at: builtIn)
        hanging["endpoint"] = "https://127.0.0.1:\(silentPort)/push/hanging"
        let (status, body) = try await http("POST", refusing.control + "/subscribe", #"{"application_server_key":"\#(otherKey)"}"#)
        #expect(status == 201)
        let refused = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        for subscription in [hanging, refused, calm] { try await Self.register(serve, subscription, key: "session:hostile") }

        for text in ["m1", "m2", "m3"] { try await Android.publish(serve, key: "session:hostile", text: text) }
        try await eventually {
            let counts = [
                try await Android.apnsPushes(serve, token: ios).count, try await Android.fcmPushes(serve, token: android).count,
                try await Self.received(builtIn, calm).count,
            ]
            return counts.allSatisfy { $0 >= 3 }
        }
        #expect(try await Self.received(refusing.control, refused).isEmpty)
        // The 403 was charged to its subscription: the app's Web Push is not paused.
        let (_, ready) = try await http("GET", serve.admin + "/readyz")
        #expect(!String(decoding: ready, as: UTF8.self).contains("paused"))
        // SIGTERM while the hanging origin still holds its pushes: a clean exit (waited for off
        // the task pool: the stop may take a connect deadline).
        let process = serve.process
        try await offPool { process.kill(SIGTERM) }
        #expect(serve.process.exit?.reason == .exit)
        #expect(serve.process.exitStatus == 0, "\(serve.process.fullLog().suffix(3_000))")
    }
}
