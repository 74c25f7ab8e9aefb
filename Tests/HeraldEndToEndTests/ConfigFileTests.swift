import Foundation
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif


@Suite("HERALD_CONFIG: several apps per instance", .serialized)
struct ConfigFileTests {
    @Test("a bad file is refused at start: exit 2, one JSON line naming the file and the field, no database (each refusal's field: HeraldAppTests)")
    func refused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("herald.yaml").path
        try Data("apps:\n  - id: a\n    topic: com.example.a".utf8).write(to: URL(fileURLWithPath: path))
        let (code, json) = try runHerald(["serve"], environment: [
            "HERALD_CONFIG": path, "HERALD_HTTP_PORT": "0",
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
        ])
        #expect(code == 2)
        #expect(json["status"] as? String == "invalid")
        #expect(json["field"] as? String == "apps[0].topic", "\(json)")
        #expect((json["error"] as? String)?.contains(path) == true, "\(json)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("herald.sqlite").path))
    }

    @Test("a wrong variable exits 2 naming it, whether the command line reads it or the settings do (each variable's refusal: HeraldAppTests)", arguments: [
        (["HERALD_LOG_LEVEL": "loud"], "HERALD_LOG_LEVEL"),
        (["HERALD_FCM_PROJECT_ID": "my-project"], "HERALD_FCM_PROJECT_ID"),
    ])
    func badFCMVariables(environment: [String: String], variable: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (code, json) = try await runHeraldOffPool(["serve"], environment: environment.merging([
            "HERALD_HTTP_PORT": "0", "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
        ]) { _, new in new })
        #expect(code == 2)
        #expect(json["status"] as? String == "invalid")
        #expect(json["field"] as? String == variable, "\(json)")
    }

    @Test("a port another process holds (API or admin), and a SQLite file another herald serve holds: exit 2 naming the variable")
    func taken() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = "sqlite:" + directory.appendingPathComponent("herald.sqlite").path
        let first = try ServeProcess(environment: ["HERALD_DATABASE_URL": database, "HERALD_HTTP_PORT": "0"])
        defer { first.process.kill(SIGTERM) }
        let port = try #require(first.api.split(separator: ":").last.map(String.init))
        // Another file, the same port.
        var (code, json) = try await runHeraldOffPool(["serve"], environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("other.sqlite").path, "HERALD_HTTP_PORT": port,
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == "HERALD_HTTP_PORT", "\(json)")
        #expect((json["error"] as? String)?.contains(port) == true, "\(json)")
        // Another file, the first one's admin port; then the API's own port given to both listeners.
        let adminPort = try #require(first.admin.split(separator: ":").last.map(String.init))
        (code, json) = try await runHeraldOffPool(["serve"], environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("other.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_ADMIN_PORT": adminPort,
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == "HERALD_ADMIN_PORT", "\(json)")
        #expect((json["error"] as? String)?.contains(adminPort) == true, "\(json)")
        (code, json) = try await runHeraldOffPool(["serve"], environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("other.sqlite").path, "HERALD_HTTP_PORT": "18444",
            "HERALD_ADMIN_PORT": "18444",
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == "HERALD_ADMIN_PORT", "\(json)")
        // The same file, another port.
        (code, json) = try await runHeraldOffPool(["serve"], environment: ["HERALD_DATABASE_URL": database, "HERALD_HTTP_PORT": "0"])
        #expect(code == 2)
        #expect(json["field"] as? String == "HERALD_DATABASE_URL", "\(json)")
        // The first is unharmed.
        let (status, _) = try await http("GET", first.api + "/healthz")
        #expect(status == 200)
    }

    @Test("a PostgreSQL host that takes the connection and never answers stops the start within its deadline (exit 2), naming it")
    func blackHoledDatabase() async throws {
        // A black hole: it accepts every connection and never sends a byte (for two minutes at most).
        let hole = Process()
        hole.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        hole.arguments = ["python3", "-c", """
            import socket, sys, time
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64); s.settimeout(1)
            print(s.getsockname()[1], flush=True)
            held, end = [], time.time() + 120
            while time.time() < end:
                try: held.append(s.accept())
                except socket.timeout: pass
            """]
        let output = Pipe()
        hole.standardOutput = output
        try hole.run()
        defer { hole.terminate() }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line += chunk
        }
        let port = try #require(Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Without the start's deadline the pool would retry for ever and this would never return.
        let (code, json) = try await runHeraldOffPool(["serve"], environment: [
            "HERALD_DATABASE_URL": "postgres://herald:secret-password@127.0.0.1:\(port)/herald", "HERALD_HTTP_PORT": "0",
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == "HERALD_DATABASE_URL", "\(json)")
        #expect((json["error"] as? String)?.contains("127.0.0.1:\(port)") == true, "\(json)")
        #expect((json["error"] as? String)?.contains("secret-password") == false)
    }

    @Test("a PostgreSQL that does not answer stops the start (exit 2), naming its host, port and cause")
    func unreachableDatabase() async throws {
        // Nothing listens on port 1.
        let (code, json) = try await runHeraldOffPool(["serve"], environment: [
            "HERALD_DATABASE_URL": "postgres://herald:secret-password@127.0.0.1:1/herald?sslmode=disable", "HERALD_HTTP_PORT": "0",
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == "HERALD_DATABASE_URL", "\(json)")
        let message = json["error"] as? String ?? ""
        #expect(message.contains("127.0.0.1:1"), "\(message)")
        #expect(!message.contains("secret-password"))
    }

    @Test("a misspelled variable stops the start, naming the variable and the nearest known one; HERALD_TEST_* is the test tools'",
          arguments: [("HERALD_PORT", "HERALD_HTTP_PORT"), ("HERALD_PUBLISH_KEY", "HERALD_PUBLISH_KEYS"), ("HERALD_VAPID_KEY_PATH", "HERALD_VAPID_PRIVATE_KEY_PATH")])
    func misspelledVariable(variable: String, nearest: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (code, json) = try await runHeraldOffPool(["serve"], environment: [
            variable: "19084", "HERALD_TEST_ANYTHING": "x",
            "HERALD_HTTP_PORT": "0", "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == variable, "\(json)")
        #expect((json["error"] as? String)?.contains("did you mean \(nearest)?") == true, "\(json)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("herald.sqlite").path))
    }

    @Test("publishing off is said at start, and the 401 tells no key from an unknown one")
    func publishingOff() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // No publisher key at all.
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
        ])
        let body = #"{"template":"custom","targets":{"keys":["session:s"]},"fields":{"aps":{"alert":"x"}}}"#
        let (status, answer) = try await http("POST", serve.api + "/v1/events", body, bearer: "publisher-key-0123456789")
        #expect(status == 401)
        #expect(String(decoding: answer, as: UTF8.self).contains("publishing is off"))
        let (bare, _) = try await http("POST", serve.api + "/v1/events", body)
        #expect(bare == 401)
        serve.process.kill(SIGTERM)
        #expect(serve.process.fullLog().contains("publishing is off for this app"))
    }

    @Test("two apps from the file, each with its own publisher key, registration policy and topic")
    func twoAppsFromFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("herald.yaml").path
        try Data("""
            # Two apps, both on the built-in simulator (no apns block).
            http_port: 0
            database_url: sqlite:\(directory.appendingPathComponent("herald.sqlite").path)
            apps:
              - id: ghosttalk
                publish_keys: [ghost-key-000000001]
              - id: claudiator
                publish_keys: [claude-key-00000001]
                registration: {policy: bearer, keys: [claude-registrar]}
                agent_event:
                  stop: {title: Fertig, body: "{device_name} wartet"}
            """.utf8).write(to: URL(fileURLWithPath: path))
        let serve = try HeraldProcess(["serve"], environment: ["HERALD_CONFIG": path])
        defer { if serve.process.isRunning { serve.kill(SIGKILL) } }
        let ready = try serve.ready()
        let api = ready.api
        let control = try #require(ready.simulatorControl)

        let (ghost, claude) = (String(repeating: "6a", count: 32), String(repeating: "7b", count: 32))
        var (status, _) = try await http("POST", api + "/v1/push/register",
            #"{"device_token":"\#(ghost)","platform":"ios","watched_addresses":["session:g"],"app":"ghosttalk"}"#)
        #expect(status == 200)
        (status, _) = try await http("POST", api + "/v1/push/register",
            #"{"device_token":"\#(claude)","platform":"ios","watched_addresses":["session:c"],"app":"claudiator"}"#)
        #expect(status == 401)
        (status, _) = try await http("POST", api + "/v1/push/register",
            #"{"device_token":"\#(claude)","platform":"ios","watched_addresses":["session:c"],"app":"claudiator"}"#,
            bearer: "claude-registrar")
        #expect(status == 200)
        // A compatibility route names its app by header or by path prefix; with two apps it must.
        let ghostSession = #"{"session_id":"g2","device_token":"\#(ghost)"}"#
        var body: [String: Any]
        (status, body) = try await post(api + "/apns/register", ghostSession, headers: [:])
        #expect(status == 400 && (body["error"] as? [String: Any])?["field"] as? String == "X-Herald-App")
        (status, _) = try await post(api + "/apns/register", ghostSession, headers: ["X-Herald-App": "ghosttalk"])
        #expect(status == 200)
        (status, body) = try await post(api + "/apps/ghosttalk/apns/stats", nil, headers: [:], method: "GET")
        #expect(body["total_registrations"] as? Int == 1 && body["topic"] as? String == "com.example.ghosttalk")
        (status, _) = try await post(api + "/apps/claudiator/api/v1/push/register", #"{"platform":"ios","token":"\#(claude)"}"#,
                                     headers: ["Authorization": "Bearer claude-registrar"])
        #expect(status == 200)

        (status, _) = try await http("POST", api + "/v1/events",
            #"{"template":"session.message","fields":{"session_id":"g2","message_id":"m","timestamp":1,"encrypted":true,"has_attachment":false}}"#,
            bearer: "ghost-key-000000001")
        #expect(status == 202)
        (status, _) = try await http("POST", api + "/v1/events",
            #"{"template":"agent.event","fields":{"hook_event_name":"Stop","device_name":"mac","session_id":"s1"}}"#, bearer: "claude-key-00000001")
        #expect(status == 202)
        var pushes: [String: (topic: String, payload: String)] = [:]
        for _ in 0..<100 where pushes.count < 2 {
            let (_, data) = try await http("GET", control + "/notifications")
            let list = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
            for n in list { pushes[n["token"] as? String ?? ""] = (n["topic"] as? String ?? "", n["payload"] as? String ?? "") }
            if pushes.count < 2 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(pushes[ghost]?.topic == "com.example.ghosttalk")
        #expect(pushes[claude]?.topic == "com.example.claudiator")
        // The app's own agent.event texts.
        #expect(pushes[claude]?.payload.hasPrefix(#"{"aps":{"alert":{"title":"Fertig","body":"mac wartet"}"#) == true)
        serve.kill(SIGTERM)
        #expect(serve.exitStatus == 0)
    }
}
