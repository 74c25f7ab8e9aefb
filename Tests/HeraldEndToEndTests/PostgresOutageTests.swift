import Foundation
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A PostgreSQL of its own (the suite's shared server stays up for the others), taken away for
/// 20 s and brought back while `herald serve` publishes and delivers on it. Runs where the
/// store suite's PostgreSQL runs (`HERALD_TEST_POSTGRES_URL` set: the server's binaries are here).
@Suite("PostgreSQL away and back", .serialized, .enabled(if: TestPostgres.serverURL != nil))
struct PostgresOutageTests {
    /// `.ci/postgres-start` on a folder and port of the test's own; its `start` and `stop` scripts.
    struct Server {
        let directory: URL
        let url: String

        static func start() async throws -> Server {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-pg-outage-\(UUID())")
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            // Below Linux's ephemeral range (32768–60999): while the server is away, another test's
            // outgoing connection could take a port in it, and the restart could not bind it again.
            let port = 20_000 + Int.random(in: 0..<12_000)
            let output = try await runProcessOffPool(
                root.appendingPathComponent(".ci/postgres-start"), [directory.appendingPathComponent("pg").path, "\(port)"])
            guard output.status == 0 else { throw CLIError("postgres-start: \(String(decoding: output.stderr, as: UTF8.self))") }
            let url = String(decoding: output.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return Server(directory: directory, url: url)
        }

        func run(_ script: String) async throws {
            let output = try await runProcessOffPool(directory.appendingPathComponent("pg/" + script), [])
            guard output.status == 0 else { throw CLIError("\(script): \(String(decoding: output.stderr, as: UTF8.self))") }
        }

        func remove() async {
            try? await run("stop")
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static let publisherKey = "publisher-key-00001"

    static func publish(_ api: String, _ n: Int) async throws -> (Int, [String: Any]) {
        let (status, body) = try await http(
            "POST", api + "/v1/events", #"{"template":"custom","targets":{"keys":["session:outage"]},"fields":{"aps":{"alert":"n\#(n)"}}}"#,
            bearer: publisherKey)
        return (status, (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:])
    }

    @Test("stopped for 20 s while events are published: every 202 is delivered once it is back, publishes meanwhile are 503 store_unavailable, /readyz is 503, and the same process recovers")
    func twentySecondOutage() async throws {
        let server = try await Server.start()
        var removed = false
        defer { if !removed { Task { await server.remove() } } }
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": server.url, "HERALD_HTTP_PORT": "0", "HERALD_PUBLISH_KEYS": Self.publisherKey, "HERALD_PUBLISH_RATE": "0",
            "HERALD_SIGNING_KEY_PATH": try signingKeyFile(),
        ])
        defer { if serve.process.process.isRunning { serve.process.kill(SIGKILL) } }
        let token = String(repeating: "d7", count: 32)
        let (registered, _) = try await http(
            "POST", serve.api + "/v1/push/register", #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["session:outage"]}"#)
        #expect(registered == 200)

        var accepted: Set<String> = []
        func publish(_ n: Int) async throws -> (Int, [String: Any]) {
            let answer = try await Self.publish(serve.api, n)
            if answer.0 == 202 { accepted.insert("n\(n)") }
            return answer
        }
        for n in 0..<5 { _ = try await publish(n) }
        #expect(accepted.count == 5)

        try await server.run("stop")
        // Away: each publish is refused as retryable, naming the cause, and the instance says it is not ready.
        var refusals: [String] = []
        for n in 5..<8 {
            let (status, body) = try await publish(n)
            refusals.append("\(status) \((body["error"] as? [String: Any])?["code"] as? String ?? "")")
        }
        #expect(refusals == Array(repeating: "503 store_unavailable", count: 3), "\(refusals)")
        #expect(try await http("GET", serve.api + "/readyz").0 == 503)
        // 20 s away in all, the pool retrying meanwhile.
        try await Task.sleep(for: .seconds(17))
        #expect(try await publish(8).0 == 503)
        try await server.run("start")

        // Back: the same process accepts again without a restart.
        var back = false
        for n in 9..<200 where !back {
            back = try await publish(n).0 == 202
            if !back { try await Task.sleep(for: .milliseconds(250)) }
        }
        #expect(back, "publishing did not come back")
        for n in 200..<205 { _ = try await publish(n) }
        #expect(try await http("GET", serve.api + "/readyz").0 == 200)

        // Every event answered 202 reaches the device (at least once: a push in flight when the
        // database went may be sent again).
        var delivered: Set<String> = []
        for _ in 0..<300 where !accepted.isSubset(of: delivered) {
            let (_, data) = try await http("GET", serve.control + "/notifications?token=" + token)
            let list = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
            delivered = Set(list.compactMap { ($0["payload"] as? String).flatMap { payload in
                ((try? JSONSerialization.jsonObject(with: Data(payload.utf8))) as? [String: Any]).flatMap { ($0["aps"] as? [String: Any])?["alert"] as? String }
            } })
            if !accepted.isSubset(of: delivered) { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(accepted.count == 11)
        #expect(accepted.subtracting(delivered).isEmpty, "accepted and never delivered: \(accepted.subtracting(delivered).sorted())")
        #expect(serve.process.process.isRunning)
        serve.process.kill(SIGTERM)
        if !accepted.isSubset(of: delivered) {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-outage-\(UUID()).log")
            try Data(serve.process.fullLog().utf8).write(to: path)
            Issue.record("herald serve's log: \(path.path)")
        }
        await server.remove()
        removed = true
    }

    @Test("a restart under three instances sharing it: every 202 delivered, each instance publishing again without a restart of its own")
    func restartUnderThreeInstances() async throws {
        let server = try await Server.start()
        var removed = false
        defer { if !removed { Task { await server.remove() } } }
        let key = try signingKeyFile()
        let instances = try (0..<3).map { _ in
            try ServeProcess(environment: [
                "HERALD_DATABASE_URL": server.url, "HERALD_HTTP_PORT": "0", "HERALD_PUBLISH_KEYS": Self.publisherKey,
                "HERALD_PUBLISH_RATE": "0", "HERALD_SIGNING_KEY_PATH": key,
            ])
        }
        defer { for instance in instances where instance.process.process.isRunning { instance.process.kill(SIGKILL) } }
        let token = String(repeating: "d8", count: 32)
        let (registered, _) = try await http(
            "POST", instances[0].api + "/v1/push/register",
            #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["session:outage"]}"#)
        #expect(registered == 200)

        var accepted: Set<String> = []
        var n = 0
        func publishRound() async throws -> [Int] {
            var statuses: [Int] = []
            for instance in instances {
                let (status, _) = try await Self.publish(instance.api, n)
                if status == 202 { accepted.insert("n\(n)") }
                statuses.append(status)
                n += 1
            }
            return statuses
        }
        #expect(try await publishRound() == [202, 202, 202])
        try await server.run("stop")
        #expect(try await publishRound() == [503, 503, 503])
        try await server.run("start")
        // Each instance's pool finds the server again on its own.
        var statuses: [Int] = []
        for _ in 0..<120 where statuses != [202, 202, 202] {
            statuses = try await publishRound()
            if statuses != [202, 202, 202] { try await Task.sleep(for: .milliseconds(250)) }
        }
        #expect(statuses == [202, 202, 202])

        // Whichever instance claimed a delivery sent it to its own built-in simulator.
        var delivered: Set<String> = []
        for _ in 0..<300 where !accepted.isSubset(of: delivered) {
            for instance in instances {
                let (_, data) = try await http("GET", instance.control + "/notifications?token=" + token)
                let list = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
                for item in list {
                    guard let payload = item["payload"] as? String,
                        let object = (try? JSONSerialization.jsonObject(with: Data(payload.utf8))) as? [String: Any],
                        let alert = (object["aps"] as? [String: Any])?["alert"] as? String
                    else { continue }
                    delivered.insert(alert)
                }
            }
            if !accepted.isSubset(of: delivered) { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(accepted.subtracting(delivered).isEmpty, "accepted and never delivered: \(accepted.subtracting(delivered).sorted())")
        #expect(instances.allSatisfy { $0.process.process.isRunning })
        for instance in instances { instance.process.kill(SIGTERM) }
        await server.remove()
        removed = true
    }

    @Test("a database that takes the connection and never answers: publishes are 503 store_unavailable, not held requests, /readyz is 503, and once it answers again the same process publishes")
    func silentDatabase() async throws {
        try await TestPostgres.withDatabase(serverURL: TestPostgres.serverURL!) { databaseURL in
            var components = try #require(URLComponents(string: databaseURL))
            let relay = try await SilentRelay.start(to: components.port ?? 5432)
            components.port = relay.port
            let serve = try ServeProcess(environment: [
                "HERALD_DATABASE_URL": try #require(components.string), "HERALD_HTTP_PORT": "0", "HERALD_PUBLISH_KEYS": Self.publisherKey,
                "HERALD_PUBLISH_RATE": "0", "HERALD_SIGNING_KEY_PATH": try signingKeyFile(),
            ])
            defer { if serve.process.process.isRunning { serve.process.kill(SIGKILL) } }
            let register = #"{"device_token":"\#(String(repeating: "d8", count: 32))","platform":"ios","watched_addresses":["session:outage"]}"#
            #expect(try await http("POST", serve.api + "/v1/push/register", register).0 == 200)
            #expect(try await Self.publish(serve.api, 0).0 == 202)

            // Silent: every connection the pool holds, and every new one, passes no byte. Without the
            // store's deadline each publish would wait on its query until the client gave up (60 s).
            relay.silence()
            for n in 1...3 {
                let (status, body) = try await Self.publish(serve.api, n)
                #expect(status == 503 && (body["error"] as? [String: Any])?["code"] as? String == "store_unavailable", "\(status) \(body)")
            }
            try await eventually { try await http("GET", serve.api + "/readyz").0 == 503 }

            // Answering again: the connections it holds are closed (a few seconds for their TLS to
            // give up), new ones work, and the same process publishes.
            relay.resume()
            try await eventually { try await Self.publish(serve.api, 9).0 == 202 }
            let process = serve.process
            try await offPool { process.kill(SIGTERM) }
            #expect(process.exit?.reason == .exit && process.exitStatus == 0, "\(String(describing: process.exit)): \(String(process.fullLog().suffix(8000)))")
            await relay.close()
        }
    }
}
