import Foundation
import HeraldTestSupport
import Testing

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

    @Test("a HERALD_LOG_FORMAT Herald does not know ends the command with exit 2, naming the variable")
    func unknownFormat() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_LOG_FORMAT"] = "xml"
        let output = try runProcess(try heraldExecutable(), ["mock-apns", "--port", "0", "--sandbox-port", "0", "--control-port", "0"], environment: environment)
        #expect(output.status == 2)
        #expect(output.lastJSONLine["field"] as? String == "HERALD_LOG_FORMAT")
    }
}
