import Foundation
import HeraldTestSupport
import Testing

/// `Examples/Messenger`, the guide's path for an end-to-end encrypted app that is not Kasia
/// (docs/heraldkit.md): the app registers with its push keys and pins the app's signing key on
/// first registration; its extension opens a sealed push and verifies it, and refuses one that is
/// not for it. Against `herald serve` and its built-in APNs simulator, as an app would meet them.
@Suite("Examples/Messenger: HeraldKit for any end-to-end encrypted app", .serialized)
struct MessengerExampleTests {
    static let publisher = "publisher-key-messenger-01"

    static func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("register with push_keys and a trust-on-first-use pin, then open and verify the sealed push; another device's state refuses it")
    func registerAndOpen() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-messenger-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let example = try builtExecutable("MessengerExample")
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": Self.publisher,
        ])
        defer { serve.process.kill(SIGTERM) }
        let (_, signingKey) = try await http("GET", serve.api + "/v1/push/signing-key")
        let publicKey = try #require(try Self.json(signingKey)["public_key"] as? String)

        // The app: a token from the simulator, registered with the device's own sealing keys.
        let (_, tokenAnswer) = try await http("POST", serve.control + "/tokens", #"{"environment":"sandbox"}"#)
        let token = try #require(try Self.json(tokenAnswer)["token"] as? String)
        let state = directory.appendingPathComponent("phone").path
        let registered = try await runProcessOffPool(
            example, ["register", "--herald", serve.api, "--token", token, "--watch", "session:room-7", "--state", state])
        #expect(registered.status == 0, "\(String(decoding: registered.stderr, as: UTF8.self))")
        #expect(registered.lastJSONLine["pinned_key"] as? String == publicKey)

        let (published, _) = try await http(
            "POST", serve.api + "/v1/events",
            #"{"template":"custom","targets":{"keys":["session:room-7"]},"fields":{"aps":{"alert":{"title":"Bob","body":"see you at 8"}},"data":{"message_id":"m-1"}}}"#,
            bearer: Self.publisher)
        #expect(published == 202)
        var notifications: [[String: Any]] = []
        for _ in 0..<600 where notifications.isEmpty {
            notifications = try Self.json(try await http("GET", serve.control + "/notifications?token=" + token).1)["notifications"] as? [[String: Any]] ?? []
            if notifications.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        }
        let payload = try #require(notifications.first?["payload"] as? String)
        #expect(!payload.contains("see you at 8") && payload.contains("herald_sealed"), "Apple saw \(payload)")

        // The extension opens it with the device's keys and the pinned key: the document Herald signed.
        let opened = try await offPool { try runProcess(example, ["open", "--state", state], input: Data(payload.utf8)) }
        #expect(opened.status == 0, "\(String(decoding: opened.stderr, as: UTF8.self))")
        let document = try Self.json(opened.stdout)
        #expect(document["message_id"] as? String == "m-1")
        #expect(((document["aps"] as? [String: Any])?["alert"] as? [String: Any])?["body"] as? String == "see you at 8")

        // Another device's keys and pin: the push is not for it.
        let other = directory.appendingPathComponent("tablet").path
        let (_, otherToken) = try await http("POST", serve.control + "/tokens", #"{"environment":"sandbox"}"#)
        let tablet = try #require(try Self.json(otherToken)["token"] as? String)
        #expect(try await runProcessOffPool(
            example, ["register", "--herald", serve.api, "--token", tablet, "--watch", "session:elsewhere", "--state", other]).status == 0)
        let refused = try await offPool { try runProcess(example, ["open", "--state", other], input: Data(payload.utf8)) }
        #expect(refused.status == 1)
        #expect(String(decoding: refused.stderr, as: UTF8.self).contains("notForThisDevice"))
    }
}
