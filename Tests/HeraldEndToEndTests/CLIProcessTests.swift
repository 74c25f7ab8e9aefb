import Foundation
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Runs `herald` with arguments and environment; returns exit code and the JSON line it printed.
func runHerald(_ arguments: [String], environment: [String: String]) throws -> (Int32, [String: Any]) {
    let output = try runProcess(try heraldExecutable(), arguments, environment: freeAdminPort(arguments, environment))
    return (output.status, output.lastJSONLine)
}

/// `runHerald` on a thread of its own: a child that takes seconds must not hold one of the task
/// pool's two threads while other suites' servers need them.
func runHeraldOffPool(_ arguments: [String], environment: [String: String]) async throws -> (Int32, [String: Any]) {
    let output = try await runProcessOffPool(try heraldExecutable(), arguments, environment: freeAdminPort(arguments, environment))
    return (output.status, output.lastJSONLine)
}

/// Tests run many servers side by side: a `serve`'s admin listener takes a free port unless told.
private func freeAdminPort(_ arguments: [String], _ environment: [String: String]) -> [String: String] {
    guard arguments.first == "serve", environment["HERALD_ADMIN_PORT"] == nil else { return environment }
    return environment.merging(["HERALD_ADMIN_PORT": "0"]) { old, _ in old }
}

@Suite("herald send against herald mock-apns, as two processes", .serialized)
struct CLIProcessTests {
    @Test("accepted → 0; dead token → 1 with Unregistered; malformed token → 2; SIGTERM → 0")
    func sendAgainstMock() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cli-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let mock = Process()
        mock.executableURL = try heraldExecutable()
        mock.arguments = ["mock-apns", "--port", "0", "--sandbox-port", "0", "--control-port", "0", "--cert-out", directory, "--topic", "com.example.cli"]
        let out = Pipe()
        mock.standardOutput = out
        mock.standardError = FileHandle.nullDevice
        try mock.run()
        defer { if mock.isRunning { mock.terminate() } }

        // The ready line: {"ready": true, "port", "control_port", "ca", "key_id", "team_id", "key_path"}.
        var buffer = Data()
        while !buffer.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { throw CLIError("mock-apns exited before it was ready") }
            buffer += chunk
        }
        let ready = try #require(try JSONSerialization.jsonObject(with: buffer.split(separator: UInt8(ascii: "\n"))[0]) as? [String: Any])
        #expect(ready["ready"] as? Bool == true)
        let port = try #require(ready["port"] as? Int)
        let controlPort = try #require(ready["control_port"] as? Int)
        let ca = try #require(ready["ca"] as? String)
        #expect(FileManager.default.fileExists(atPath: ca))

        var env = ProcessInfo.processInfo.environment
        env["HERALD_APNS_URL"] = "https://127.0.0.1:\(port)"
        env["HERALD_APNS_CA_FILE"] = ca
        env["HERALD_APNS_KEY_PATH"] = try #require(ready["key_path"] as? String)
        env["HERALD_APNS_KEY_ID"] = try #require(ready["key_id"] as? String)
        env["HERALD_APNS_TEAM_ID"] = try #require(ready["team_id"] as? String)
        env["HERALD_APNS_TOPIC"] = "com.example.cli"

        let good = String(repeating: "1f", count: 32)
        let (okCode, okJSON) = try runHerald(["send", "--token", good, "--title", "Hi", "--body", "There"], environment: env)
        #expect(okCode == 0)
        #expect(okJSON["status"] as? String == "accepted")
        #expect((okJSON["apns_id"] as? String).flatMap(UUID.init(uuidString:)) != nil)

        let dead = String(repeating: "de", count: 32)
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(controlPort)/faults")!)
        request.httpMethod = "POST"
        request.httpBody = Data(#"{"kind":"unregistered","token":"\#(dead)","timestamp_ms":1700000000000}"#.utf8)
        let (_, faultResponse) = try await URLSession.shared.data(for: request)
        #expect((faultResponse as? HTTPURLResponse)?.statusCode == 201)
        let (deadCode, deadJSON) = try runHerald(["send", "--token", dead], environment: env)
        #expect(deadCode == 1)
        #expect(deadJSON["status"] as? String == "rejected")
        #expect(deadJSON["reason"] as? String == "Unregistered")
        #expect(deadJSON["http_status"] as? Int == 410)
        #expect(deadJSON["timestamp"] as? Int == 1_700_000_000_000)

        let (badCode, badJSON) = try runHerald(["send", "--token", "not-hex"], environment: env)
        #expect(badCode == 2)
        #expect(badJSON["field"] as? String == "device_token")
        let (badFlagCode, _) = try runHerald(["send", "--token", good, "--priority", "7"], environment: env)
        #expect(badFlagCode == 2)

        let (repeatCode, repeatJSON) = try runHerald(["send", "--token", good, "--repeat", "200", "--concurrency", "50"], environment: env)
        #expect(repeatCode == 0)
        #expect(repeatJSON["sent"] as? Int == 200)
        #expect(repeatJSON["accepted"] as? Int == 200)

        // The control port saw all of it.
        let (statsData, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(controlPort)/stats")!)
        let stats = try #require(try JSONSerialization.jsonObject(with: statsData) as? [String: Any])
        #expect(stats["accepted"] as? Int == 201)
        #expect((stats["reasons"] as? [String: Int])?["Unregistered"] == 1)

        mock.terminate()  // SIGTERM
        mock.waitUntilExit()
        #expect(mock.terminationStatus == 0)
    }

    @Test("--platform android against herald mock-fcm: accepted → 0 and the data map arrives; UNREGISTERED → 1; a bad data map → 2; --repeat reports the rate")
    func sendAndroidAgainstMock() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cli-fcm-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let fcm = try MockFCMProcess(directory: directory)
        defer { fcm.process.kill(SIGTERM) }
        let env = ProcessInfo.processInfo.environment.merging(fcm.serveEnvironment) { _, new in new }
        let token = "fcm-cli_1:" + String(repeating: "C", count: 140)

        let (okCode, okJSON) = try runHerald(["send", "--platform", "android", "--token", token, "--title", "Hi", "--body", "There"], environment: env)
        #expect(okCode == 0, "\(okJSON)")
        #expect(okJSON["status"] as? String == "accepted")
        #expect((okJSON["name"] as? String)?.hasPrefix("projects/herald-simulator/messages/") == true)
        let (_, data) = try await http("GET", fcm.control + "/notifications?token=" + token)
        let received = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]]
        #expect(received?.first?["data"] as? [String: String] == ["title": "Hi", "body": "There"])
        #expect(received?.first?["priority"] as? String == "high")

        let dead = "fcm-cli_dead:" + String(repeating: "D", count: 140)
        _ = try await http("POST", fcm.control + "/faults", #"{"kind":"unregistered","token":"\#(dead)"}"#)
        let (deadCode, deadJSON) = try runHerald(["send", "--platform", "android", "--token", dead], environment: env)
        #expect(deadCode == 1)
        #expect(deadJSON["status"] as? String == "rejected" && deadJSON["reason"] as? String == "UNREGISTERED" && deadJSON["http_status"] as? Int == 404)

        let (badCode, badJSON) = try runHerald(["send", "--platform", "android", "--token", token, "--payload-json", #"{"n":1}"#], environment: env)
        #expect(badCode == 2 && badJSON["field"] as? String == "--payload-json")
        let (kindCode, kindJSON) = try runHerald(["send", "--platform", "android", "--token", token, "--token-kind", "gcm"], environment: env)
        #expect(kindCode == 2 && kindJSON["field"] as? String == "--token-kind")

        let (repeatCode, repeatJSON) = try runHerald(["send", "--platform", "android", "--token", token, "--repeat", "200", "--concurrency", "20"], environment: env)
        #expect(repeatCode == 0)
        #expect(repeatJSON["accepted"] as? Int == 200 && repeatJSON["cpu_us_per_push"] is Double)
    }
}
