import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldPushCore
import HeraldStore
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `herald serve` (defaults: SQLite, built-in simulator) with the simulator's recorded pushes.
struct ServedGateway {
    let serve: HeraldProcess
    let api: String
    let control: String
    let directory: URL

    /// Starts `herald serve`; `seed` may first write devices into its database file.
    static func start(
        environment: [String: String] = [:], seed: (SQLiteStore) async throws -> Void = { _ in }
    ) async throws -> ServedGateway {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-compat-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try SQLiteStore(path: directory.appendingPathComponent("herald.sqlite").path)
        try await store.migrate()
        try await seed(store)
        var env = ["HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0"]
        env.merge(environment) { _, new in new }
        let serve = try ServeProcess(environment: env)
        return ServedGateway(serve: serve.process, api: serve.api, control: serve.control, directory: directory)
    }

    /// Every push the simulator accepted, oldest first.
    func notifications() async throws -> [[String: Any]] {
        let (_, data) = try await http("GET", control + "/notifications")
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
    }

    /// Waits until the simulator holds `count` pushes (or 10 s pass).
    func waitForNotifications(_ count: Int) async throws -> [[String: Any]] {
        var list: [[String: Any]] = []
        for _ in 0..<100 {
            list = try await notifications()
            if list.count >= count { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return list
    }

    func stop() -> Int32 {
        serve.kill(SIGTERM)
        try? FileManager.default.removeItem(at: directory)
        return serve.exitStatus ?? -1
    }
}

/// Sends with extra headers; returns the status and the JSON body.
func post(_ url: String, _ body: String?, headers: [String: String], method: String = "POST") async throws -> (Int, [String: Any]) {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    request.httpBody = body.map { Data($0.utf8) }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
}

@Suite("The other apps' documented flows against herald serve", .serialized)
struct CompatibilityProcessTests {
    @Test("SafeWhisper: register by X-Device-ID, silent pushes to participants but the sender, device switch, token move, logout")
    func safeWhisper() async throws {
        let gateway = try await ServedGateway.start(environment: ["HERALD_PUBLISH_KEYS": "sw-backend-key-00001"])
        defer { _ = gateway.stop() }
        let register = gateway.api + "/api/devices/token"
        let (alice, bob, bob2, carol) = (String(repeating: "a0", count: 32), String(repeating: "b0", count: 32),
                                         String(repeating: "b2", count: 32), String(repeating: "c0", count: 32))

        // The document's curl: X-Device-ID and {"apnsToken"} → 201 {"id": <uuid>}.
        var (status, body) = try await post(register, #"{"apnsToken":"\#(alice)"}"#, headers: ["X-Device-ID": "alice-phone"])
        #expect(status == 201)
        let aliceID = try #require(body["id"] as? String)
        #expect(UUID(uuidString: aliceID) != nil)
        (status, body) = try await post(register, #"{"apnsToken":"\#(alice)"}"#, headers: ["X-Device-ID": "alice-phone"])
        #expect(status == 201 && body["id"] as? String == aliceID)
        (status, body) = try await post(register, #"{"apnsToken":"\#(alice)"}"#, headers: [:])
        #expect(status == 400 && (body["error"] as? [String: Any])?["field"] as? String == "X-Device-ID")
        (status, body) = try await post(register, #"{"apnsToken":"not-hex"}"#, headers: ["X-Device-ID": "alice-phone"])
        #expect(status == 400 && (body["error"] as? [String: Any])?["field"] as? String == "apnsToken")
        for (token, device) in [(bob, "bob-phone"), (carol, "carol-phone")] {
            (status, _) = try await post(register, #"{"apnsToken":"\#(token)"}"#, headers: ["X-Device-ID": device])
            #expect(status == 201)
        }

        // Alice writes in conv-42: her backend pushes to the participants' devices except hers.
        func message(_ devices: [String]) async throws -> Int {
            let targets = devices.map { "\"\($0)\"" }.joined(separator: ",")
            let (status, body) = try await post(gateway.api + "/v1/events",
                #"{"template":"conversation.silent","targets":{"device_ids":[\#(targets)]},"exclude_device_ids":["alice-phone"],"fields":{"conversation_id":"conv-42"}}"#,
                headers: ["Authorization": "Bearer sw-backend-key-00001"])
            #expect(status == 202)
            return body["deliveries"] as? Int ?? -1
        }
        #expect(try await message(["alice-phone", "bob-phone", "carol-phone"]) == 2)
        var pushes = try await gateway.waitForNotifications(2)
        #expect(Set(pushes.compactMap { $0["token"] as? String }) == [bob, carol])
        for push in pushes {
            // SHA-256("conv-42") = 49933ea253b58d70fdf1ca26f4b1bca8…: its first 32 hex characters, nothing else.
            #expect((push["payload"] as? String).map(withoutSignature) == #"{"aps":{"content-available":1},"c":"49933ea253b58d70fdf1ca26f4b1bca8"}"#)
            #expect(push["push_type"] as? String == "background" && push["priority"] as? Int == 5)
            // A second push about the conversation replaces the first on the device.
            #expect(push["collapse_id"] as? String == "49933ea253b58d70fdf1ca26f4b1bca8")
        }

        // Bob switches phones: the same device id with a new token replaces the old one.
        (status, _) = try await post(register, #"{"apnsToken":"\#(bob2)"}"#, headers: ["X-Device-ID": "bob-phone"])
        #expect(status == 201)
        // Carol's token moves to her tablet's device id.
        (status, _) = try await post(register, #"{"apnsToken":"\#(carol)"}"#, headers: ["X-Device-ID": "carol-tablet"])
        #expect(status == 201)
        #expect(try await message(["alice-phone", "bob-phone", "carol-phone"]) == 1)
        pushes = try await gateway.waitForNotifications(3)
        #expect(pushes.count == 3 && pushes.last?["token"] as? String == bob2)

        // Logout removes all the device's tokens.
        (status, _) = try await post(gateway.api + "/api/devices/logout", nil, headers: ["X-Device-ID": "carol-tablet"])
        #expect(status == 200)
        (status, body) = try await post(gateway.api + "/api/devices/logout", nil, headers: [:])
        #expect(status == 400 && (body["error"] as? [String: Any])?["field"] as? String == "X-Device-ID")
        #expect(try await message(["bob-phone", "carol-phone", "carol-tablet"]) == 1)
        pushes = try await gateway.waitForNotifications(4)
        #expect(pushes.count == 4 && pushes.last?["token"] as? String == bob2)
        #expect(pushes.filter { $0["token"] as? String == bob }.count == 1)
        #expect(pushes.filter { $0["token"] as? String == carol }.count == 1)
    }

    @Test("GhostTalk: register for a session, stats, session.message pushes (by publisher and /apns/send), unregister, stale cleanup")
    func ghostTalk() async throws {
        let stale = String(repeating: "d0", count: 32)
        let gateway = try await ServedGateway.start(
            environment: ["HERALD_PUBLISH_KEYS": "gt-server-key-00001", "HERALD_GHOSTTALK_SEND_ENABLED": "true"],
            seed: { store in
                // Not seen for 100 days: the cleanup job removes it when herald serve starts (default 90 days).
                _ = try await store.register(
                    Registration(app: "default", token: try APNsTokenRule().token(stale), attributes: DeviceAttributes(production: false),
                                 watchSet: try WatchSet(watched: [WatchKey.session("05OLD")])),
                    now: Date().addingTimeInterval(-100 * 86_400))
            })
        defer { _ = gateway.stop() }
        let (phone, other) = (String(repeating: "e0", count: 32), String(repeating: "f0", count: 32))
        let session = "05ABC123DEF456"

        var (status, body) = try await post(gateway.api + "/apns/register", #"{"session_id":"\#(session)","device_token":"\#(phone)"}"#, headers: [:])
        #expect(status == 200)
        #expect(body as NSDictionary == ["success": true, "message": "Device registered successfully"] as NSDictionary)
        (status, _) = try await post(gateway.api + "/apns/register", #"{"session_id":"05FFF","device_token":"\#(other)"}"#, headers: [:])
        #expect(status == 200)
        (status, body) = try await post(gateway.api + "/apns/register", #"{"device_token":"\#(other)"}"#, headers: [:])
        #expect(status == 400 && (body["error"] as? [String: Any])?["field"] as? String == "session_id")
        (status, body) = try await post(gateway.api + "/apns/stats", nil, headers: [:], method: "GET")
        #expect(status == 200)
        #expect(body as NSDictionary == ["total_registrations": 2, "production_mode": false, "topic": "com.example.herald"] as NSDictionary)

        // The server announces a message to the recipient's session.
        (status, body) = try await post(gateway.api + "/v1/events",
            #"{"template":"session.message","fields":{"session_id":"\#(session)","message_id":"msg-123","timestamp":1697192400,"encrypted":true,"has_attachment":false}}"#,
            headers: ["Authorization": "Bearer gt-server-key-00001"])
        #expect(status == 202 && body["deliveries"] as? Int == 1)
        // The testing-only /apns/send, with the document's request (an RFC 3339 timestamp).
        let send = #"{"session_id":"\#(session)","payload":{"session_id":"\#(session)","message_id":"msg-124","timestamp":"2025-10-13T10:30:00Z","encrypted":true,"has_attachment":true}}"#
        (status, _) = try await post(gateway.api + "/apns/send", send, headers: [:])
        #expect(status == 401)
        (status, body) = try await post(gateway.api + "/apns/send", send, headers: ["Authorization": "Bearer gt-server-key-00001"])
        #expect(status == 200 && body["success"] as? Bool == true)

        let pushes = try await gateway.waitForNotifications(2)
        #expect(pushes.count == 2 && pushes.allSatisfy { $0["token"] as? String == phone })
        let payloads = Set(pushes.compactMap { ($0["payload"] as? String).map(withoutSignature) })
        #expect(payloads == [
            #"{"aps":{"alert":{"title":"New Message","body":"You have a new message"},"badge":1,"sound":"default","mutable-content":1,"content-available":1},"session_id":"\#(session)","message_id":"msg-123","timestamp":1697192400,"encrypted":true,"has_attachment":false}"#,
            #"{"aps":{"alert":{"title":"New Message","body":"You have a new message"},"badge":1,"sound":"default","mutable-content":1,"content-available":1},"session_id":"\#(session)","message_id":"msg-124","timestamp":1760351400,"encrypted":true,"has_attachment":true}"#,
        ])
        #expect(pushes.allSatisfy { $0["topic"] as? String == "com.example.herald" && $0["push_type"] as? String == "alert" })

        (status, body) = try await post(gateway.api + "/apns/unregister", #"{"session_id":"\#(session)"}"#, headers: [:])
        #expect(status == 200)
        #expect(body as NSDictionary == ["success": true, "message": "Device unregistered successfully"] as NSDictionary)
        (status, body) = try await post(gateway.api + "/apns/stats", nil, headers: [:], method: "GET")
        #expect(body["total_registrations"] as? Int == 1)
    }

    @Test("Claudiator: bearer-only registration, agent.event titles and bodies to every device of the app; /apns/send is off")
    func claudiator() async throws {
        let gateway = try await ServedGateway.start(environment: [
            "HERALD_REGISTRATION_KEYS": "claude-app-key-00001", "HERALD_PUBLISH_KEYS": "claude-server-key-001",
        ])
        defer { _ = gateway.stop() }
        let (phone, pad) = (String(repeating: "1c", count: 32), String(repeating: "2c", count: 32))
        let register = gateway.api + "/api/v1/push/register"
        var (status, _) = try await post(register, #"{"platform":"ios","token":"\#(phone)"}"#, headers: [:])
        #expect(status == 401)
        (status, _) = try await post(register, #"{"platform":"ios","token":"\#(phone)"}"#, headers: ["Authorization": "Bearer wrong"])
        #expect(status == 401)
        for token in [phone, pad] {
            (status, _) = try await post(register, #"{"platform":"ios","token":"\#(token)"}"#, headers: ["Authorization": "Bearer claude-app-key-00001"])
            #expect(status == 200)
        }
        (status, _) = try await post(register, #"{"platform":"android","token":"fcm-token-1"}"#, headers: ["Authorization": "Bearer claude-app-key-00001"])
        #expect(status == 200)

        let events: [(String, String, String)] = [
            (#""hook_event_name":"Stop""#, "Claude is waiting", "Session idle on shahads-macbook"),
            (#""hook_event_name":"Notification","notification_type":"permission_prompt","tool_name":"Bash""#, "Permission needed", "Bash on shahads-macbook"),
            (#""hook_event_name":"Notification","notification_type":"idle_prompt""#, "Session idle", "Idle on shahads-macbook"),
            (#""hook_event_name":"Notification","notification_type":"auth_success","message":"Signed in""#, "Claude notification", "Signed in"),
        ]
        for (fields, _, _) in events {
            let (status, body) = try await post(gateway.api + "/v1/events",
                #"{"template":"agent.event","fields":{\#(fields),"device_name":"shahads-macbook","session_id":"abc123"}}"#,
                headers: ["Authorization": "Bearer claude-server-key-001"])
            // Every device of the app: the two iOS ones through APNs, the Android one through FCM.
            #expect(status == 202 && body["deliveries"] as? Int == 3)
        }
        (status, _) = try await post(gateway.api + "/v1/events",
            #"{"template":"agent.event","fields":{"hook_event_name":"PreToolUse","device_name":"m","session_id":"s"}}"#,
            headers: ["Authorization": "Bearer claude-server-key-001"])
        #expect(status == 400)

        let pushes = try await gateway.waitForNotifications(8)
        #expect(pushes.count == 8)
        for (fields, title, body) in events {
            let event = fields.contains("Stop") ? "Stop" : "Notification"
            let expected = #"{"aps":{"alert":{"title":"\#(title)","body":"\#(body)"},"sound":"default"},"session_id":"abc123","device_name":"shahads-macbook","event_type":"\#(event)"}"#
            #expect(Set(pushes.filter { ($0["payload"] as? String).map(withoutSignature) == expected }.compactMap { $0["token"] as? String }) == [phone, pad], "\(title)")
        }
        #expect(pushes.allSatisfy { $0["topic"] as? String == "com.example.herald" && $0["priority"] as? Int == 10 })
        (status, _) = try await post(gateway.api + "/apns/send", #"{"session_id":"s","payload":{}}"#, headers: ["Authorization": "Bearer claude-server-key-001"])
        #expect(status == 404)
    }
}
