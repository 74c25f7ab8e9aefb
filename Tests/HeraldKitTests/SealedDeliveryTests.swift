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
        try await client(iPhoneKeys).register(deviceToken: iPhone, watchSet: try builder.build(), environment: .sandbox)
        #expect(try SigningKeyPin.trustOnFirstUse(pins).pinnedKey() == publicKey)
        let android = "fcm-sealed_1:" + String(repeating: "S", count: 140)
        try await client(androidKeys).register(deviceToken: android, watchSet: try builder.build(), platform: .android, environment: nil)
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
        try await eventually {
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
        #expect(NSDictionary(dictionary: userInfo["aps"] as? [String: Any] ?? [:]) == ["alert": ["loc-key": "Something new", "body": "Something new"], "mutable-content": 1])
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
        // What signing and sealing cost is counted: the three pushes, and their CPU time exported
        // beside them. Its value is time, which a test does not assert: `herald-bench cost`
        // measures it (Benchmarks/README.md).
        #expect(metrics.contains(#"herald_signed_pushes_total{app="default"} 3"#), "\(metrics)")
        let cpuLine = metrics.split(separator: "\n").first { $0.hasPrefix(#"herald_sealing_cpu_seconds_total{app="default"} "#) }
        #expect(cpuLine.flatMap { line in Double(line.split(separator: " ").last ?? "") } != nil, "\(metrics)")
    }

    @Test("nothing outside the seal names the collapse id: a sealed iPhone, a sealed Android device and a browser get an opaque one, stable per id; an unsealed iPhone the id as given")
    func opaqueCollapseIDs() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-collapse-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": Self.publisher,
        ])
        defer { serve.process.kill(SIGTERM) }
        func client(_ keys: SealedPushKeys?) -> HeraldClient {
            var configuration = HeraldClient.Configuration(baseURL: URL(string: serve.api)!)
            configuration.pushKeys = keys
            return HeraldClient(configuration: configuration)
        }
        var builder = WatchSetBuilder()
        builder.addKey("session:collapse")
        func token() async throws -> String {
            try #require(try Self.json(try await http("POST", serve.control + "/tokens", #"{"environment":"sandbox"}"#).1)["token"] as? String)
        }
        let sealedPhone = try await token(), plainPhone = try await token()
        try await client(SealedPushKeys()).register(deviceToken: sealedPhone, watchSet: try builder.build(), environment: .sandbox)
        try await client(nil).register(deviceToken: plainPhone, watchSet: try builder.build(), environment: .sandbox)
        let android = "fcm-collapse_1:" + String(repeating: "C", count: 140)
        try await client(SealedPushKeys()).register(deviceToken: android, watchSet: try builder.build(), platform: .android, environment: nil)
        let web = try #require(serve.webPushControl)
        let vapid = try Self.json(try await http("GET", serve.api + "/v1/push/vapid-public-key").1)["public_key"] as? String ?? ""
        let subscription = try Self.json(try await http("POST", web + "/subscribe", #"{"application_server_key":"\#(vapid)"}"#).1)
        let subscriptionJSON = String(decoding: try JSONSerialization.data(withJSONObject: subscription), as: UTF8.self)
        #expect(try await http("POST", serve.api + "/v1/push/register", #"{"platform":"web","subscription":\#(subscriptionJSON),"watched_addresses":["session:collapse"]}"#).0 == 200)

        // Two events with one collapse id (a txid, say), one with another.
        for (collapse, text) in [("tx-4e3855c6", "first"), ("tx-4e3855c6", "second"), ("tx-other", "third")] {
            let (status, _) = try await http(
                "POST", serve.api + "/v1/events",
                #"{"template":"custom","collapse_id":"\#(collapse)","targets":{"keys":["session:collapse"]},"fields":{"aps":{"alert":"\#(text)"}}}"#,
                bearer: Self.publisher)
            #expect(status == 202)
        }
        let endpoint = try #require(subscription["endpoint"] as? String).addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        var seen: [String: [String]] = [:]
        try await eventually {
            func ids(_ url: String, _ field: String) async throws -> [String] {
                (try Self.json(try await http("GET", url).1)["notifications"] as? [[String: Any]] ?? []).compactMap { $0[field] as? String }
            }
            seen["sealed"] = try await ids(serve.control + "/notifications?token=" + sealedPhone, "collapse_id")
            seen["plain"] = try await ids(serve.control + "/notifications?token=" + plainPhone, "collapse_id")
            seen["android"] = try await ids(try #require(serve.fcmControl) + "/notifications?token=" + android, "collapse_key")
            seen["web"] = try await ids(web + "/notifications?endpoint=" + endpoint, "topic")
            return seen.values.allSatisfy { $0.count == 3 }
        }
        // Pushes of one event may arrive in any order: compared as counts per id.
        #expect(seen["plain"]?.sorted() == ["tx-4e3855c6", "tx-4e3855c6", "tx-other"])
        var twice: [String: String] = [:]
        for name in ["sealed", "android", "web"] {
            let ids = seen[name] ?? []
            let counts = Dictionary(grouping: ids, by: { $0 }).mapValues(\.count)
            #expect(counts.values.sorted() == [1, 2], "\(name): one opaque id per collapse id: \(ids)")
            // (An opaque id is base64url: it may hold "tx-" by chance, about once in 5,000 runs; the
            // given ids and the txid's eight characters it holds once in 10^13.)
            #expect(ids.allSatisfy { $0.count == 32 && $0 != "tx-4e3855c6" && $0 != "tx-other" && !$0.contains("4e3855c6") }, "\(name): \(ids)")
            twice[name] = counts.first { $0.value == 2 }?.key
        }
        // One opaque id per app and collapse id, whatever the service.
        #expect(Set(twice.values).count == 1 && twice.count == 3, "\(twice)")
    }

    @Test("nothing outside the seal identifies: each template (Kasia message, handshake, payment, custom, conversation.silent, a Matrix notify) to a sealed iPhone, a sealed Android device and a browser shows Apple, Google and the push service no value the event carries")
    func nothingOutsideTheSeal() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-outside-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": Self.publisher, "HERALD_MATRIX_APPS": "im.example.ios=apns,im.example.android=fcm",
            "HERALD_MATRIX_REACHES_REGISTERED_DEVICES": "true",
        ])
        defer { serve.process.kill(SIGTERM) }
        let keys = #""push_keys":{"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}"#
        let phone = try #require(try Self.json(try await http("POST", serve.control + "/tokens", #"{"environment":"sandbox"}"#).1)["token"] as? String)
        let android = "fcm-outside_1:" + String(repeating: "O", count: 140)
        for body in [
            #"{"device_token":"\#(phone)","platform":"ios","environment":"sandbox","device_id":"phone-1","watched_addresses":[],\#(keys)}"#,
            #"{"device_token":"\#(android)","platform":"android","device_id":"android-1","watched_addresses":[],\#(keys)}"#,
        ] {
            let (status, answer) = try await http("POST", serve.api + "/v1/push/register", body)
            #expect(status == 200, "\(String(decoding: answer, as: UTF8.self))")
        }
        let web = try #require(serve.webPushControl)
        let vapid = try Self.json(try await http("GET", serve.api + "/v1/push/vapid-public-key").1)["public_key"] as? String ?? ""
        let subscription = try Self.json(try await http("POST", web + "/subscribe", #"{"application_server_key":"\#(vapid)"}"#).1)
        let endpoint = try #require(subscription["endpoint"] as? String)
        let subscriptionJSON = String(decoding: try JSONSerialization.data(withJSONObject: subscription), as: UTF8.self)
        #expect(try await http("POST", serve.api + "/v1/push/register", #"{"platform":"web","device_id":"browser-1","subscription":\#(subscriptionJSON),"watched_addresses":[]}"#).0 == 200)

        // What the events carry, each a value only the seal may hold.
        let sender = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"
        let (message, handshake, payment) = (String(repeating: "6a", count: 32), String(repeating: "6b", count: 32), String(repeating: "6c", count: 32))
        let carried = [
            message, handshake, payment, "qp0l70zd", "70xmfj", "aliaszz", "6369706839", "150000000", "1.5", "conv-secret-7", "hello secret",
            "thread-secret-9", "conversation-secret-3", "secretroom", "secretevent", "@alice", "matrix words",
        ]
        let tokens = #""targets":{"tokens":["\#(phone)","\#(android)","\#(endpoint)"]}"#
        for body in [
            #"{"template":"kasia.contextual_message",\#(tokens),"fields":{"tx_id":"\#(message)","sender":"\#(sender)","alias":"aliaszz","payload":"6369706839","timestamp":1704067200,"daa_score":9}}"#,
            #"{"template":"kasia.handshake",\#(tokens),"fields":{"tx_id":"\#(handshake)","sender":"\#(sender)","payload":"ab","timestamp":1704067200,"daa_score":7}}"#,
            #"{"template":"kasia.payment",\#(tokens),"fields":{"tx_id":"\#(payment)","sender":"\#(sender)","timestamp":1704067200,"daa_score":8,"amount":150000000}}"#,
            #"{"template":"custom","collapse_id":"conv-secret-7","thread_id":"thread-secret-9",\#(tokens),"fields":{"aps":{"alert":"hello secret"}}}"#,
            #"{"template":"conversation.silent","targets":{"device_ids":["phone-1","android-1","browser-1"]},"fields":{"conversation_id":"conversation-secret-3"}}"#,
        ] {
            let (status, answer) = try await http("POST", serve.api + "/v1/events", body, bearer: Self.publisher)
            #expect(status == 202, "\(body): \(String(decoding: answer, as: UTF8.self))")
        }
        let apnsKey = Data(stride(from: 0, to: phone.count, by: 2).map { UInt8(phone.dropFirst($0).prefix(2), radix: 16)! }).base64EncodedString()
        let notify = #"{"notification":{"event_id":"$secretevent","room_id":"!secretroom:x","sender":"@alice:x","type":"m.room.message","content":{"body":"matrix words"},"counts":{"unread":1},"devices":[{"app_id":"im.example.ios","pushkey":"\#(apnsKey)","pushkey_ts":1},{"app_id":"im.example.android","pushkey":"\#(android)","pushkey_ts":1}]}}"#
        let (notified, answer) = try await http("POST", serve.api + "/_matrix/push/v1/notify", notify)
        #expect(notified == 200 && String(decoding: answer, as: UTF8.self) == #"{"rejected":[]}"#)

        // What each push service sees: every header and every outer byte, the ciphertext aside.
        func records(_ url: String) async throws -> [[String: Any]] {
            try Self.json(try await http("GET", url).1)["notifications"] as? [[String: Any]] ?? []
        }
        let query = endpoint.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? endpoint
        var seen: (apns: [[String: Any]], fcm: [[String: Any]], web: [[String: Any]]) = ([], [], [])
        try await eventually {
            seen = (
                try await records(serve.control + "/notifications?token=" + phone),
                try await records(try #require(serve.fcmControl) + "/notifications?token=" + android),
                try await records(web + "/notifications?endpoint=" + query))
            return seen.apns.count == 6 && seen.fcm.count == 6 && seen.web.count == 5
        }
        /// A record with its ciphertext taken out, as text.
        func outside(_ record: [String: Any], dropping fields: [String]) throws -> String {
            var record = record
            for field in fields { record[field] = nil }
            if let payload = record["payload"] as? String, var document = try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any] {
                #expect(document["herald_sealed"] is String, "\(payload)")
                document["herald_sealed"] = nil
                #expect(Set(document.keys) == ["aps"], "only aps beside the seal: \(payload)")
                #expect((document["aps"] as? [String: Any])?["thread-id"] == nil, "\(payload)")
                record["payload"] = String(decoding: try JSONSerialization.data(withJSONObject: document, options: .sortedKeys), as: UTF8.self)
            }
            if var data = record["data"] as? [String: Any] {
                #expect(data["herald_sealed"] is String, "\(data)")
                data["herald_sealed"] = nil
                #expect(data.isEmpty, "only the seal in FCM's data: \(data)")
                record["data"] = data
            }
            return String(decoding: try JSONSerialization.data(withJSONObject: record, options: .sortedKeys), as: UTF8.self)
        }
        var outer: [String] = []
        for record in seen.apns { outer.append(try outside(record, dropping: ["token", "received_at_ms", "apns_id", "key_id"])) }
        for record in seen.fcm { outer.append(try outside(record, dropping: ["token"])) }
        // The browser's push service sees TTL, Urgency, Topic and ciphertext (`plaintext` is what the browser decrypts).
        for record in seen.web { outer.append(try outside(record, dropping: ["endpoint", "plaintext", "vapid_key"])) }
        for text in outer {
            for value in carried { #expect(!text.contains(value), "\(value) outside the seal: \(text)") }
        }
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
