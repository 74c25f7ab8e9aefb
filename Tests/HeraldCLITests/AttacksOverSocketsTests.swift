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
        #expect(try await http("POST", serve.api + "/v1/push/register", bare, bearer: bob).0 == 422)

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
