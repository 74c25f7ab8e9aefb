import Foundation
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("Log format")
struct LogFormatTests {
    @Test("HERALD_LOG_FORMAT=json: every line herald serve writes to standard error, at every level, is one JSON object with time, level, label, message")
    func jsonLines() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-logs-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try HeraldProcess(["serve"], environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
            "HERALD_HTTP_PORT": "0", "HERALD_LOG_FORMAT": "json", "HERALD_LOG_LEVEL": "trace",
        ])
        defer { if serve.process.isRunning { serve.kill(SIGKILL) } }
        let api = try serve.ready().api
        let (status, _) = try await http("GET", api + "/healthz")
        #expect(status == 200)
        serve.kill(SIGTERM)
        let lines = serve.fullLog().split(separator: "\n")
        #expect(lines.count > 3)
        let time = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        var levels: Set<String> = []
        for line in lines {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                Issue.record("not a JSON object: \(line)")
                continue
            }
            #expect((object["time"] as? String).flatMap { try? time.parse($0) } != nil, "\(line)")
            #expect(object["label"] is String && object["message"] is String, "\(line)")
            if let level = object["level"] as? String { levels.insert(level) }
        }
        // The loud line about the built-in simulator, as a shipper would see it.
        #expect(levels.contains("warning"))
        #expect(lines.contains { $0.contains(#""level":"warning""#) && $0.contains("simulator") })
    }

    @Test("one push traced at debug: its registration's and its publish's request ids are in their lines, the publish's beside the event id, and the delivery names the event")
    func tracedPush() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-logs-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try HeraldProcess(["serve"], environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
            "HERALD_HTTP_PORT": "0", "HERALD_LOG_FORMAT": "json", "HERALD_LOG_LEVEL": "debug", "HERALD_PUBLISH_KEYS": "publisher-key-0123456789",
        ])
        defer { if serve.process.isRunning { serve.kill(SIGKILL) } }
        let (api, control, _, _, _) = try serve.ready()
        let token = String(repeating: "7e", count: 32)
        func post(_ path: String, _ body: String, requestID: String, bearer: String? = nil) async throws -> [String: Any] {
            var request = URLRequest(url: URL(string: api + path)!)
            request.httpMethod = "POST"
            request.httpBody = Data(body.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue(requestID, forHTTPHeaderField: "X-Request-ID")
            if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
            let (data, _) = try await URLSession.shared.data(for: request)
            return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        }
        _ = try await post("/v1/push/register", #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["session:trace"]}"#, requestID: "trace-register-1")
        let published = try await post(
            "/v1/events", #"{"template":"custom","targets":{"keys":["session:trace"]},"fields":{"aps":{"alert":"traced"}}}"#,
            requestID: "trace-publish-1", bearer: "publisher-key-0123456789")
        let eventID = try #require(published["event_id"] as? String)
        for _ in 0..<100 {
            let (_, data) = try await http("GET", try #require(control) + "/notifications?token=" + token)
            if String(decoding: data, as: UTF8.self).contains("traced") { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        serve.kill(SIGTERM)
        let lines = serve.fullLog().split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        func metadata(_ line: [String: Any]) -> [String: String] { line["metadata"] as? [String: String] ?? [:] }
        #expect(lines.contains { metadata($0)["request_id"] == "trace-register-1" && metadata($0)["route"] == "/v1/push/register" && metadata($0)["status"] == "200" })
        #expect(lines.contains { metadata($0)["request_id"] == "trace-publish-1" && metadata($0)["route"] == "/v1/events" && metadata($0)["status"] == "202" })
        #expect(lines.contains { metadata($0)["request_id"] == "trace-publish-1" && $0["message"] as? String == "event accepted" && metadata($0)["event"] == eventID })
        // The outbox's line about the delivery names the event and the request that created it.
        #expect(lines.contains {
            $0["message"] as? String == "delivered" && metadata($0)["event"] == eventID && metadata($0)["request_id"] == "trace-publish-1"
        })
        #expect(!serve.fullLog().contains(token), "the token appears in full")
    }

    @Test("a HERALD_LOG_FORMAT Herald does not know ends the command with exit 2, naming the variable")
    func unknownFormat() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_LOG_FORMAT"] = "xml"
        let output = try runProcess(try heraldExecutable(), ["mock-apns", "--port", "0", "--sandbox-port", "0", "--control-port", "0"], environment: environment)
        #expect(output.status == 2)
        #expect(output.lastJSONLine["field"] as? String == "HERALD_LOG_FORMAT")
    }
}
