import Foundation
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

    static func start(environment: [String: String] = [:]) throws -> ServedGateway {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-compat-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var env = ["HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0"]
        env.merge(environment) { _, new in new }
        let serve = try HeraldProcess(["serve"], environment: env)
        return ServedGateway(
            serve: serve, api: "http://127.0.0.1:\(try serve.port(after: "listening on 127.0.0.1:"))",
            control: "http://127.0.0.1:\(try serve.port(after: "control=http://127.0.0.1:"))", directory: directory)
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
        return serve.process.terminationStatus
    }
}

/// POSTs with extra headers; returns the status and the JSON body.
func post(_ url: String, _ body: String?, headers: [String: String]) async throws -> (Int, [String: Any]) {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = "POST"
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
        let gateway = try ServedGateway.start(environment: ["HERALD_PUBLISH_KEYS": "sw-backend"])
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
                headers: ["Authorization": "Bearer sw-backend"])
            #expect(status == 202)
            return body["deliveries"] as? Int ?? -1
        }
        #expect(try await message(["alice-phone", "bob-phone", "carol-phone"]) == 2)
        var pushes = try await gateway.waitForNotifications(2)
        #expect(Set(pushes.compactMap { $0["token"] as? String }) == [bob, carol])
        for push in pushes {
            // SHA-256("conv-42") = 49933ea253b58d70fdf1ca26f4b1bca8…: its first 32 hex characters, nothing else.
            #expect(push["payload"] as? String == #"{"aps":{"content-available":1},"c":"49933ea253b58d70fdf1ca26f4b1bca8"}"#)
            #expect(push["push_type"] as? String == "background" && push["priority"] as? Int == 5)
            #expect(push["collapse_id"] == nil || push["collapse_id"] is NSNull)
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
}
