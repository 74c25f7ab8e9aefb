import Foundation
import HeraldStore
import HeraldTestSupport
import Testing

/// A real Synapse (PyPI `matrix-synapse`) as a child process, on 127.0.0.1 with SQLite.
private final class Synapse: @unchecked Sendable {
    let process = Process()
    let url: String

    init(directory: URL) throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", fixtures.appendingPathComponent("synapse_homeserver.py").path, directory.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw CLIError("synapse exited before it printed its address (is matrix-synapse installed?)") }
            line += chunk
        }
        let ready = try JSONSerialization.jsonObject(with: line.split(separator: UInt8(ascii: "\n"))[0]) as? [String: Any]
        guard let url = ready?["url"] as? String else { throw CLIError("no address from synapse") }
        self.url = url
    }

    /// Waits until the client API answers: at most three minutes, a bound for a broken install,
    /// not a deadline a loaded machine has to meet (Synapse's start is Python's imports and its
    /// database's migrations, which took over a minute beside the other suites once).
    func ready() async throws {
        let deadline = ContinuousClock.now + .seconds(180)
        while ContinuousClock.now < deadline {
            if let (status, _) = try? await http("GET", url + "/_matrix/client/versions"), status == 200 { return }
            try await Task.sleep(for: .milliseconds(250))
        }
        throw CLIError("synapse did not start within 180 s")
    }

    /// SIGKILL: a throwaway homeserver (Synapse's graceful SIGTERM can take long).
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// A client-API call as a user; the JSON answer.
    func call(_ method: String, _ path: String, _ body: Any, as token: String? = nil) async throws -> [String: Any] {
        let data = try JSONSerialization.data(withJSONObject: body)
        let (status, answer) = try await http(method, url + path, method == "GET" ? nil : String(decoding: data, as: UTF8.self), bearer: token)
        guard status == 200 else { throw CLIError("\(method) \(path): \(status) \(String(decoding: answer, as: UTF8.self))") }
        return try JSONSerialization.jsonObject(with: answer) as? [String: Any] ?? [:]
    }

    func register(_ user: String) async throws -> String {
        let answer = try await call("POST", "/_matrix/client/v3/register",
            ["username": user, "password": "password-of-\(user)", "auth": ["type": "m.login.dummy"]])
        return try #require(answer["access_token"] as? String)
    }
}

/// A 32-byte token as a Matrix pusher's pushkey (base64, Sygnal's convention) and as APNs sees it (hex).
private func apnsToken(_ seed: UInt8) -> (pushkey: String, hex: String) {
    let bytes = (0..<32).map { UInt8(truncatingIfNeeded: Int($0) * 13 + Int(seed)) }
    return (Data(bytes).base64EncodedString(), bytes.map { String(format: "%02x", $0) }.joined())
}

@Suite("Matrix: a real Synapse pushes through Herald's /_matrix/push/v1/notify", .serialized)
struct MatrixSynapseTests {
    @Test("two pushers (full and event_id_only): each message reaches the APNs simulator once; a crash mid-stream duplicates nothing; a dead token makes Synapse delete its pusher")
    func synapseEndToEnd() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-matrix-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let mock = try MockAPNsProcess(directory: directory, topic: "com.example.matrix")
        defer { mock.process.kill(SIGTERM) }
        var env = mock.serveEnvironment
        env.merge([
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_MATRIX_APPS": "im.example.ios=apns,im.example.*=fcm",
        ]) { _, new in new }
        var serve = try HeraldProcess(["serve"], environment: env)
        let api = try serve.ready().api
        env["HERALD_HTTP_PORT"] = String(api.split(separator: ":").last!)

        let synapse = try Synapse(directory: directory.appendingPathComponent("synapse"))
        defer { synapse.stop() }
        try await synapse.ready()
        let alice = try await synapse.register("alice")
        let bob = try await synapse.register("bob")
        let carol = try await synapse.register("carol")
        let (bobKey, bobHex) = apnsToken(1)
        let (carolKey, carolHex) = apnsToken(2)
        let gateway = api + "/_matrix/push/v1/notify"
        func pusher(_ key: String, data: [String: Any]) -> [String: Any] {
            ["kind": "http", "app_id": "im.example.ios", "pushkey": key, "app_display_name": "Example", "device_display_name": "phone",
             "lang": "en", "data": data.merging(["url": gateway]) { a, _ in a }]
        }
        _ = try await synapse.call("POST", "/_matrix/client/v3/pushers/set", pusher(bobKey, data: [:]), as: bob)
        _ = try await synapse.call("POST", "/_matrix/client/v3/pushers/set", pusher(carolKey, data: [
            "format": "event_id_only",
            "default_payload": ["aps": ["mutable-content": 1, "alert": ["loc-key": "Notification", "loc-args": [String]()]]],
        ]), as: carol)
        let room = try #require(try await synapse.call("POST", "/_matrix/client/v3/createRoom",
            ["name": "Mission Control", "invite": ["@bob:localhost", "@carol:localhost"], "preset": "private_chat"], as: alice)["room_id"] as? String)
        for member in [bob, carol] { _ = try await synapse.call("POST", "/_matrix/client/v3/join/\(room)", [String: Any](), as: member) }

        var sent: [String: String] = [:]  // event id → body
        func say(_ text: String, type: String = "m.room.message") async throws {
            let content: [String: Any] = type == "m.room.message"
                ? ["msgtype": "m.text", "body": text]
                : ["algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEnAc" + text, "sender_key": "k", "session_id": "s", "device_id": "D"]
            let answer = try await synapse.call("PUT", "/_matrix/client/v3/rooms/\(room)/send/\(type)/\(UUID())", content, as: alice)
            sent[try #require(answer["event_id"] as? String)] = text
        }
        /// The simulator's pushes to a token, by event id (counting repeats).
        func arrived(_ hex: String) async throws -> [String: [[String: Any]]] {
            var byEvent: [String: [[String: Any]]] = [:]
            for push in try await mock.notifications(token: hex) {
                guard let text = push["payload"] as? String,
                    let payload = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                    let event = payload["event_id"] as? String, sent[event] != nil
                else { continue }
                byEvent[event, default: []].append(payload)
            }
            return byEvent
        }
        func waitForAll(_ what: String) async throws {
            for _ in 0..<600 {
                let (b, c) = (try await arrived(bobHex), try await arrived(carolHex))
                if b.count == sent.count && c.count == sent.count { return }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw CLIError("\(what): bob got \(try await arrived(bobHex).count), carol \(try await arrived(carolHex).count) of \(sent.count)")
        }

        for i in 1...3 { try await say("message \(i)") }
        try await say("secret", type: "m.room.encrypted")
        try await waitForAll("before the crash")
        for (event, pushes) in try await arrived(bobHex) {
            let alert = (pushes[0]["aps"] as? [String: Any])?["alert"] as? [String: Any]
            if sent[event] == "secret" {
                // An encrypted room's event: ids and counts only.
                #expect(alert == nil && pushes[0]["room_id"] as? String == room && pushes[0]["unread_count"] != nil)
                #expect(!"\(pushes[0])".contains("alice") && !"\(pushes[0])".contains("Mission Control"))
            } else {
                #expect(alert?["loc-key"] as? String == "MSG_FROM_USER_IN_ROOM_WITH_CONTENT")
                #expect(alert?["loc-args"] as? [String] == ["alice", "Mission Control", sent[event]!])
            }
        }
        for (event, pushes) in try await arrived(carolHex) {
            // event_id_only: the pusher's default payload, the ids and the count; never the text.
            let payload = pushes[0]
            #expect(payload["room_id"] as? String == room && payload["event_id"] as? String == event && payload["unread_count"] is Int)
            #expect((payload["aps"] as? [String: Any])?["mutable-content"] as? Int == 1)
            #expect(!"\(payload)".contains(sent[event]!))
        }

        // Herald killed while messages keep coming: Synapse retries, Herald restarts on the same file.
        // The kill comes once message 4 is pushed and its outcome is on disk. A push APNs took in
        // the few milliseconds before its outcome is written goes again after its lease if Herald
        // dies right then: that is at-least-once delivery (none lost), and what this test checks is
        // that Synapse's retries of notifies add no push, so it does not kill inside that window.
        try await say("message 4")
        let store = try SQLiteStore(path: directory.appendingPathComponent("herald.sqlite").path)
        for attempt in 0... {
            let pushed = (try await arrived(bobHex).count, try await arrived(carolHex).count) == (sent.count, sent.count)
            let deliveries = try await store.stats().deliveries
            if pushed && deliveries[.sending] == nil && deliveries[.pending] == nil { break }
            guard attempt < 600 else { throw CLIError("message 4 not pushed and recorded: \(deliveries)") }
            try await Task.sleep(for: .milliseconds(100))
        }
        serve.kill(SIGKILL)
        for i in 5...7 { try await say("message \(i)") }
        try await Task.sleep(for: .milliseconds(500))
        serve = try HeraldProcess(["serve"], environment: env)
        _ = try serve.ready()
        try await say("message 8")
        try await waitForAll("after the restart")
        for hex in [bobHex, carolHex] {
            let repeats = try await arrived(hex).filter { $0.value.count > 1 }.map { sent[$0.key]! }
            #expect(repeats.isEmpty, "pushed more than once: \(repeats)")
        }

        // Bob's token dies at APNs: the next notify's answer rejects it and Synapse deletes the pusher.
        _ = try await http("POST", mock.control + "/faults", #"{"kind":"unregistered","token":"\#(bobHex)"}"#)
        var bobPushers = 1
        for i in 0..<30 where bobPushers > 0 {
            try await say("after the token died \(i)")
            try await Task.sleep(for: .milliseconds(500))
            bobPushers = (try await synapse.call("GET", "/_matrix/client/v3/pushers", [String: Any](), as: bob)["pushers"] as? [Any])?.count ?? -1
        }
        #expect(bobPushers == 0, "Synapse kept bob's pusher")
        let carolPushers = try await synapse.call("GET", "/_matrix/client/v3/pushers", [String: Any](), as: carol)["pushers"] as? [Any]
        #expect(carolPushers?.count == 1)
        serve.kill(SIGTERM)
    }
}
