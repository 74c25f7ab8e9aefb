import Foundation
import HeraldKit
import HeraldTestSupport
import PushSigning
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sealed and signed pushes end to end (docs/signed-pushes.md): `herald serve` with a key `herald signing-key`
/// made, its built-in APNs, FCM and Web Push simulators, and HeraldKit on the device's side.
@Suite("Sealed and signed pushes through herald serve", .serialized)
struct SealedDeliveryTests {
    static let publisher = "publisher-key-00001"

    static func eventually(_ condition: () async throws -> Bool) async throws {
        for _ in 0..<1_200 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    static func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("one event to a sealed iPhone, a sealed Android device and a browser: Apple and Google see only the generic alert and ciphertext, and HeraldKit opens the same signed document from each")
    func threeDevices() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sealed-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // The operator's key: made once, 0600, never overwritten.
        let keyDirectory = directory.appendingPathComponent("keys").path
        let made = try await runProcessOffPool(heraldExecutable(), ["signing-key", "--out", keyDirectory])
        let publicKey = try #require(made.lastJSONLine["public_key"] as? String)
        let keyPath = try #require(made.lastJSONLine["private_key_path"] as? String)
        #expect((try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as? Int) == 0o600)
        let again = try await runProcessOffPool(heraldExecutable(), ["signing-key", "--out", keyDirectory])
        #expect(again.status != 0, "a second signing-key overwrote the first")

        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": Self.publisher, "HERALD_SIGNING_KEY_PATH": keyPath, "HERALD_SEALED_ALERT": "Something new",
        ])
        defer { serve.process.kill(SIGTERM) }
        let (status, answer) = try await http("GET", serve.api + "/v1/push/signing-key")
        #expect(try status == 200 && (Self.json(answer))["public_key"] as? String == publicKey)

        // The iPhone and the Android device register through HeraldKit with keys of their own,
        // pinning the app's key on first use.
        let iPhoneKeys = SealedPushKeys()
        let androidKeys = SealedPushKeys()
        let pins = try SharedStore(directory: directory.appendingPathComponent("app-group"))
        func client(_ keys: SealedPushKeys) -> HeraldClient {
            var configuration = HeraldClient.Configuration(baseURL: URL(string: serve.api)!)
            configuration.pushKeys = keys
            configuration.signingKeyPin = .trustOnFirstUse(pins)
            return HeraldClient(configuration: configuration)
        }
        var builder = WatchSetBuilder()
        builder.addKey("session:sealed")
        let (_, tokenAnswer) = try await http("POST", serve.control + "/tokens", #"{"environment":"sandbox"}"#)
        let iPhone = try #require((try Self.json(tokenAnswer))["token"] as? String)
        try await client(iPhoneKeys).register(deviceToken: iPhone, watchSet: try builder.build(), environment: "sandbox")
        #expect(try SigningKeyPin.trustOnFirstUse(pins).pinnedKey() == publicKey)
        let android = "fcm-sealed_1:" + String(repeating: "S", count: 140)
        try await client(androidKeys).register(deviceToken: android, watchSet: try builder.build(), platform: "android", environment: nil)
        // The browser: a subscription its push service made for the app's VAPID key.
        let web = try #require(serve.webPushControl)
        let (_, vapid) = try await http("GET", serve.api + "/v1/push/vapid-public-key")
        let (_, subscribed) = try await http("POST", web + "/subscribe", #"{"application_server_key":"\#(try Self.json(vapid)["public_key"] as? String ?? "")"}"#)
        let subscription = try Self.json(subscribed)
        let subscriptionJSON = String(decoding: try JSONSerialization.data(withJSONObject: subscription), as: UTF8.self)
        let (registered, registration) = try await http(
            "POST", serve.api + "/v1/push/register", #"{"platform":"web","subscription":\#(subscriptionJSON),"watched_addresses":["session:sealed"]}"#)
        #expect(try registered == 200 && (Self.json(registration))["signing_key"] as? String == publicKey)

        let (published, body) = try await http(
            "POST", serve.api + "/v1/events",
            #"{"template":"custom","targets":{"keys":["session:sealed"]},"fields":{"aps":{"alert":{"title":"Alice","body":"the secret is 42"}},"data":{"room":"meet-at-noon"}}}"#,
            bearer: Self.publisher)
        #expect(published == 202, "\(String(decoding: body, as: UTF8.self))")

        let endpoint = try #require(subscription["endpoint"] as? String)
        var apns: [[String: Any]] = []
        var fcm: [[String: Any]] = []
        var browser: [[String: Any]] = []
        try await Self.eventually {
            apns = try Self.json(try await http("GET", serve.control + "/notifications?token=" + iPhone).1)["notifications"] as? [[String: Any]] ?? []
            fcm = try Self.json(try await http("GET", try #require(serve.fcmControl) + "/notifications?token=" + android).1)["notifications"] as? [[String: Any]] ?? []
            let query = endpoint.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? endpoint
            browser = try Self.json(try await http("GET", web + "/notifications?endpoint=" + query).1)["notifications"] as? [[String: Any]] ?? []
            return !apns.isEmpty && !fcm.isEmpty && !browser.isEmpty
        }
        try #require(apns.count == 1 && fcm.count == 1 && browser.count == 1)

        // What Apple and Google recorded: the generic alert and ciphertext, nothing of the message.
        let apnsPayload = try #require(apns[0]["payload"] as? String)
        let userInfo = try Self.json(Data(apnsPayload.utf8))
        #expect(userInfo.keys.sorted() == ["aps", "herald_sealed"])
        #expect(NSDictionary(dictionary: userInfo["aps"] as? [String: Any] ?? [:]) == ["alert": ["body": "Something new"], "mutable-content": 1])
        let fcmData = try #require(fcm[0]["data"] as? [String: String])
        #expect(fcmData.keys.sorted() == ["herald_sealed"])
        for seen in [apnsPayload, fcmData.description] {
            #expect(!seen.contains("secret") && !seen.contains("Alice") && !seen.contains("meet-at-noon"), "\(seen)")
        }

        // HeraldKit opens each and verifies it with the pinned key: one document, the unsealed push's.
        let pinned = try #require(try SigningKeyPin.trustOnFirstUse(pins).pinnedKey())
        let fromIPhone = try PushAuthenticator(pinnedKey: pinned, keys: iPhoneKeys).document(userInfo: userInfo)
        let fromAndroid = try PushAuthenticator(pinnedKey: pinned, keys: androidKeys).document(fcmData: fcmData)
        let plaintext = Array(try #require(browser[0]["plaintext"] as? String).utf8)
        let fromBrowser = try PushAuthenticator(pinnedKey: pinned, keys: nil).document(payload: plaintext)
        #expect(fromIPhone == fromAndroid && fromAndroid == fromBrowser)
        let document = try Self.json(Data(fromIPhone))
        #expect(document["room"] as? String == "meet-at-noon")
        #expect(NSDictionary(dictionary: document["aps"] as? [String: Any] ?? [:]) == ["alert": ["title": "Alice", "body": "the secret is 42"]])
        // The browser's push is the document with its signature attached: any JSON reader still reads it.
        #expect(try Self.json(Data(plaintext))["room"] as? String == "meet-at-noon")
        // One device's keys do not open another's push.
        #expect(throws: PushRejection.notForThisDevice) { try PushAuthenticator(pinnedKey: pinned, keys: androidKeys).document(userInfo: userInfo) }

        // The independent Python verifier reads the same three pushes to the same document.
        let now = Int64(Date().timeIntervalSince1970)
        for (form, push, keys) in [("apns", apnsPayload as Any, iPhoneKeys as SealedPushKeys?), ("fcm", fcmData, androidKeys), ("payload", String(decoding: plaintext, as: UTF8.self), nil)] {
            let verdict = try await SignedPushTests.python(form: form, push: push, pinned: pinned, keys: keys, now: now)
            #expect((verdict["document"] as? String).flatMap(Base64URLText.decode) == fromIPhone, "\(form): \(verdict)")
        }

        // The two sealing keys were made by the registrations; the push paid for none.
        let metrics = String(decoding: try await http("GET", serve.admin + "/metrics").1, as: UTF8.self)
        #expect(metrics.contains(#"herald_sealing_keys_made_total{app="default",at="registration"} 2"#), "\(metrics)")
        #expect(metrics.contains(#"herald_sealing_keys_made_total{app="default",at="push"} 0"#), "\(metrics)")
        // What signing and sealing cost is counted: the three pushes, and some CPU time for them.
        #expect(metrics.contains(#"herald_signed_pushes_total{app="default"} 3"#), "\(metrics)")
        let cpuLine = metrics.split(separator: "\n").first { $0.hasPrefix(#"herald_sealing_cpu_seconds_total{app="default"} "#) }
        let cpuSeconds: Double? = cpuLine.flatMap { line in Double(line.split(separator: " ").last ?? "") }
        #expect((cpuSeconds ?? 0) > 0, "\(metrics)")
    }

    @Test("an app with sealed: required refuses an iPhone without push_keys (422 naming push_keys) and takes one with them; a bad key is 422 naming the part")
    func requiredSealing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-required-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": Self.publisher, "HERALD_SEALED": "required",
        ])
        defer { serve.process.kill(SIGTERM) }
        let token = String(repeating: "ab", count: 32)
        let (refused, refusal) = try await http("POST", serve.api + "/v1/push/register", #"{"platform":"ios","device_token":"\#(token)","watched_addresses":["session:x"]}"#)
        #expect(refused == 422)
        #expect((try Self.json(refusal)["error"] as? [String: Any])?["field"] as? String == "push_keys")
        let keys = SealedPushKeys()
        let (bad, badAnswer) = try await http(
            "POST", serve.api + "/v1/push/register",
            #"{"platform":"ios","device_token":"\#(token)","watched_addresses":["session:x"],"push_keys":{"p256dh":"AAAA","auth":"\#(keys.authSecret)"}}"#)
        #expect(bad == 422)
        #expect((try Self.json(badAnswer)["error"] as? [String: Any])?["field"] as? String == "push_keys.p256dh")
        let (accepted, _) = try await http(
            "POST", serve.api + "/v1/push/register",
            #"{"platform":"ios","device_token":"\#(token)","watched_addresses":["session:x"],"push_keys":{"p256dh":"\#(keys.p256dh)","auth":"\#(keys.authSecret)"}}"#)
        #expect(accepted == 200)
        // Without a key file, pushes are signed with a key made at start, and the start says so.
        serve.process.kill(SIGTERM)
        #expect(serve.process.fullLog().contains("pushes are signed with a key made at this start"))
    }
}
