import Foundation
import HeraldTestSupport
import Testing

/// Attacks from issue 55 as an attacker runs them against a running `herald serve`: real sockets,
/// JWTs signed with the app's secret (by PyJWT), an unauthenticated Matrix notify.
@Suite("Attacks against herald serve over its sockets", .serialized)
struct AttacksOverSocketsTests {
    static let secret = "an HS256 secret of 32 bytes or more, for tests!"
    static let publisher = "publisher-key-attacks-001"

    /// A registration JWT for `sub`, as the app's backend would sign it.
    static func jwt(sub: String, keys: [String] = ["session:s"]) throws -> String {
        let claims = try JSONSerialization.data(withJSONObject: [
            "sub": sub, "aud": "default", "exp": Int(Date().timeIntervalSince1970) + 600, "keys": keys,
        ])
        let output = try runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", "-c", "import jwt, json, sys; print(jwt.encode(json.loads(sys.argv[1]), sys.argv[2], algorithm='HS256'))",
             String(decoding: claims, as: UTF8.self), secret])
        return String(decoding: output.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("Mallory, with her own JWT, cannot take Bob's sealed token through GhostTalk's or SafeWhisper's routes, nor reach it with a forged Matrix notify; Bob's one push arrives sealed")
    func signedBypassAndMatrix() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-attacks-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": Self.publisher, "HERALD_REGISTRATION_JWT_SECRET": Self.secret,
            "HERALD_MATRIX_APPS": "im.example.ios=apns", "HERALD_REGISTRATION_RATE": "0",
        ])
        defer { serve.process.kill(SIGTERM) }
        let token = try #require(try Self.json(try await http("POST", serve.control + "/tokens", #"{"environment":"sandbox"}"#).1)["token"] as? String)
        // Bob registers his iPhone with keys for sealed pushes.
        let (p256dh, auth) = ("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", "BTBZMqHH6r4Tts7J_aSIgg")
        let bob = try Self.jwt(sub: "bob"), mallory = try Self.jwt(sub: "mallory")
        let register = #"{"device_token":"\#(token)","platform":"ios","environment":"sandbox","device_id":"bob","watched_addresses":["session:s"],"push_keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#
        #expect(try await http("POST", serve.api + "/v1/push/register", register, bearer: bob).0 == 200)

        // GhostTalk's route with Mallory's own session, and SafeWhisper's with her own device id.
        #expect(try await http("POST", serve.api + "/apns/register", #"{"session_id":"mallory","device_token":"\#(token)"}"#, bearer: mallory).0 == 403)
        #expect(try await http("POST", serve.api + "/api/devices/token", #"{"apnsToken":"\#(token)"}"#, bearer: mallory, headers: ["X-Device-ID": "mallory"]).0 == 403)
        // Bob's own registration without his keys would send his pushes in clear: refused too.
        let bare = #"{"device_token":"\#(token)","platform":"ios","environment":"sandbox","device_id":"bob","watched_addresses":["session:s"]}"#
        #expect(try await http("POST", serve.api + "/v1/push/register", bare, bearer: bob).0 == 409)

        // A Matrix notify naming Bob's token (no credentials needed), with a forged Kasia payment in its payload.
        let pushkey = Data(stride(from: 0, to: token.count, by: 2).map { UInt8(token.dropFirst($0).prefix(2), radix: 16)! }).base64EncodedString()
        let notify = #"{"notification":{"event_id":"$forged","room_id":"!r:x","counts":{"unread":1},"devices":[{"app_id":"im.example.ios","pushkey":"\#(pushkey)","pushkey_ts":1,"data":{"format":"event_id_only","default_payload":{"aps":{"alert":"100000 KAS from Alice"},"kasia":{"type":"payment","txId":"ab","sender":"kaspa:qalice","amount":1}}}}]}}"#
        let (notified, answer) = try await http("POST", serve.api + "/_matrix/push/v1/notify", notify)
        #expect(notified == 200 && String(decoding: answer, as: UTF8.self) == #"{"rejected":[]}"#, "the answer says nothing of the token")

        // The app's own event: Bob's phone gets exactly that one push, sealed.
        #expect(try await http("POST", serve.api + "/v1/events", #"{"template":"custom","collapse_id":"tx-1","targets":{"keys":["session:s"]},"fields":{"aps":{"alert":"hi"}}}"#, bearer: Self.publisher).0 == 202)
        var pushes: [[String: Any]] = []
        for _ in 0..<600 where pushes.isEmpty {
            pushes = try Self.json(try await http("GET", serve.control + "/notifications?token=" + token).1)["notifications"] as? [[String: Any]] ?? []
            if pushes.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        }
        try await Task.sleep(for: .milliseconds(500))  // room for a wrong second push to show up
        pushes = try Self.json(try await http("GET", serve.control + "/notifications?token=" + token).1)["notifications"] as? [[String: Any]] ?? []
        #expect(pushes.count == 1, "\(pushes)")
        let payload = pushes.first?["payload"] as? String ?? ""
        #expect(payload.contains("herald_sealed") && !payload.contains("KAS") && !payload.contains("hi\""), "\(payload)")
        #expect(pushes.first?["collapse_id"] as? String != "tx-1")
    }
}

extension AttacksOverSocketsTests {
    @Test("two push services an attacker runs (127.0.0.2 and 127.0.0.3) accept the app's first push and refuse the rest with 403: the app's Web Push is not paused and its other browsers get every push")
    func originsAnyoneRunsCannotPause() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-origins-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var attackers: [MockWebPushProcess] = []
        defer { for attacker in attackers { attacker.process.kill(SIGTERM) } }
        for host in ["127.0.0.2", "127.0.0.3"] {
            let folder = directory.appendingPathComponent(host)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            attackers.append(try MockWebPushProcess(directory: folder, host: host))
        }
        // The operator allows the attackers' hosts (as a UnifiedPush user's server would be) and
        // trusts their CAs; it does not list them among its trusted push services.
        let caFile = directory.appendingPathComponent("cas.pem")
        let cas = try attackers.map { try String(contentsOfFile: $0.serveEnvironment["HERALD_WEBPUSH_CA_FILE"]!, encoding: .utf8) }.joined()
        try cas.write(to: caFile, atomically: true, encoding: .utf8)
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": Self.publisher, "HERALD_REGISTRATION_RATE": "0",
            "HERALD_WEBPUSH_ALLOW_HOSTS": attackers.map { $0.serveEnvironment["HERALD_WEBPUSH_ALLOW_HOSTS"]! }.joined(separator: ","),
            "HERALD_WEBPUSH_CA_FILE": caFile.path,
        ])
        defer { serve.process.kill(SIGTERM) }
        let builtIn = try #require(serve.webPushControl)
        typealias Web = WebPushDeliveryTests
        let calm = try await Web.subscribe(serve, at: builtIn)
        var planted: [[String: Any]] = []
        for attacker in attackers { planted.append(try await Web.subscribe(serve, at: attacker.control)) }
        for subscription in [calm] + planted { try await Web.register(serve, subscription, key: "session:origins") }

        // The first push: every origin accepts it (201).
        try await AndroidDeliveryTests.publish(serve, key: "session:origins", text: "m1", bearer: Self.publisher)
        try await eventually(seconds: 30) {
            for (attacker, subscription) in zip(attackers, planted) where try await Web.received(attacker.control, subscription).isEmpty { return false }
            return try await Web.received(builtIn, calm).count == 1
        }
        // Then both answer 403 to every push, as a refusal of the app's VAPID key would read.
        for attacker in attackers {
            #expect(try await http("POST", attacker.control + "/faults", #"{"kind":"server_error","status":403}"#).0 == 201)
        }
        try await AndroidDeliveryTests.publish(serve, key: "session:origins", text: "m2", bearer: Self.publisher)
        try await eventually(seconds: 30) {
            for attacker in attackers {
                let (_, body) = try await http("GET", attacker.control + "/stats")
                let rejected = (try Self.json(body)["rejected"] as? [String: Int]) ?? [:]
                if rejected.values.reduce(0, +) == 0 { return false }
            }
            return try await Web.received(builtIn, calm).count == 2
        }
        // Both refusals are in: the app's Web Push is not paused, and the next pushes reach the calm browser.
        let (_, ready) = try await http("GET", serve.admin + "/readyz")
        #expect(!String(decoding: ready, as: UTF8.self).contains("paused"), "\(String(decoding: ready, as: UTF8.self))")
        for text in ["m3", "m4"] { try await AndroidDeliveryTests.publish(serve, key: "session:origins", text: text, bearer: Self.publisher) }
        try await eventually(seconds: 30) { try await Web.received(builtIn, calm).count == 4 }
        // Its log, once it has stopped (waited for off the task pool), never says it paused the app.
        let process = serve.process
        try await offPool { process.kill(SIGTERM) }
        #expect(!serve.process.fullLog().contains("pausing this app's sends"))
    }
}
