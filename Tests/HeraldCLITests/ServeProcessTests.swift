import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `herald serve` as a child process, as a user runs it: defaults (SQLite file, built-in simulator).
@Suite("herald serve, as a process", .serialized)
struct ServeProcessTests {
    @Test("register, publish, and the push arrives at the built-in simulator; SIGTERM exits 0")
    func endToEnd() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-serve-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let serve = Process()
        serve.executableURL = try heraldExecutable()
        serve.arguments = ["serve"]
        var env = ProcessInfo.processInfo.environment
        for key in env.keys where key.hasPrefix("HERALD_") { env[key] = nil }
        env["HERALD_DATABASE_URL"] = "sqlite:" + directory.appendingPathComponent("herald.sqlite").path
        env["HERALD_HTTP_PORT"] = "0"
        env["HERALD_PUBLISH_KEYS"] = "publisher-key"
        serve.environment = env
        let errors = Pipe()
        serve.standardError = errors
        serve.standardOutput = FileHandle.nullDevice
        try serve.run()
        defer { if serve.isRunning { serve.terminate() } }

        // The log says where the API and the simulator's control port are.
        var log = ""
        var httpPort: Int?
        var controlPort: Int?
        let started = Date()
        while httpPort == nil || controlPort == nil {
            guard Date().timeIntervalSince(started) < 30 else { throw CLIError("herald serve did not start: \(log)") }
            let chunk = errors.fileHandleForReading.availableData
            if chunk.isEmpty { throw CLIError("herald serve exited: \(log)") }
            log += String(decoding: chunk, as: UTF8.self)
            httpPort = Self.port(in: log, after: "listening on 127.0.0.1:")
            controlPort = Self.port(in: log, after: "control=http://127.0.0.1:")
        }
        #expect(log.contains("SIMULATOR"))
        let api = "http://127.0.0.1:\(httpPort!)"
        let token = String(repeating: "ab", count: 32)
        let sender = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"
        let txID = String(repeating: "0f", count: 32)

        var (status, body) = try await http("POST", api + "/v1/push/register",
            #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["\#(sender)"]}"#)
        #expect(status == 200 && String(decoding: body, as: UTF8.self) == #"{"registered":true,"watched_addresses":1}"#)
        (status, _) = try await http("POST", api + "/v1/events",
            #"{"template":"kasia.contextual_message","fields":{"tx_id":"\#(txID)","sender":"\#(sender)","alias":"a1","payload":"636970685f6d73673a","timestamp":1704067200,"daa_score":12345678}}"#,
            bearer: "publisher-key")
        #expect(status == 202)
        (status, _) = try await http("POST", api + "/v1/events", #"{"template":"custom","targets":{"tokens":["\#(token)"]},"fields":{"aps":{"alert":"x"}}}"#)
        #expect(status == 401)

        // The push reaches the simulator over TLS + HTTP/2.
        var notifications: [[String: Any]] = []
        for _ in 0..<100 {
            let (_, data) = try await http("GET", "http://127.0.0.1:\(controlPort!)/notifications?token=\(token)")
            notifications = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
            if !notifications.isEmpty { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let push = try #require(notifications.first)
        #expect(notifications.count == 1)
        #expect(push["collapse_id"] as? String == txID)
        #expect(push["payload"] as? String == #"{"aps":{"alert":{"title":"New Message","body":"From kaspa:qp...70xmfj"},"mutable-content":1,"content-available":1,"thread-id":"\#(sender)"},"kasia":{"type":"contextual_message","txId":"\#(txID)","sender":"\#(sender)","payload":"636970685f6d73673a","timestamp":1704067200,"daaScore":12345678}}"#)

        let metrics = String(decoding: try await http("GET", api + "/metrics").1, as: UTF8.self)
        #expect(metrics.contains(#"herald_delivery_attempts_total{outcome="sent",reason="accepted"} 1"#), "\(metrics)")

        serve.terminate()  // SIGTERM
        serve.waitUntilExit()
        #expect(serve.terminationStatus == 0)
    }

    static func port(in log: String, after marker: String) -> Int? {
        guard let range = log.range(of: marker) else { return nil }
        return Int(log[range.upperBound...].prefix(while: \.isNumber))
    }
}
