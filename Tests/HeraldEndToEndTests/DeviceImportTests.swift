import Foundation
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `herald devices import FILE|-`: registration bodies as JSON lines, checked as the API checks
/// them; a bad line is named and nothing is written; then `herald serve` pushes to what was imported.
@Suite("herald devices import", .serialized)
struct DeviceImportTests {
    static let publisher = "import-publisher-key-01"

    static func line(_ i: Int, platform: String = "ios", extra: String = "") -> String {
        let token = platform == "ios" ? String(repeating: "0", count: 62) + String(format: "%02x", i) : "fcm-import_\(i):" + String(repeating: "I", count: 140)
        return #"{"device_token":"\#(token)","platform":"\#(platform)","device_id":"user-\#(i)","watched_addresses":["session:import-\#(i)","session:all"]\#(extra)}"#
    }

    @Test("a bad line is named by its number and field and nothing is written; the same file fixed imports every device (a file and standard input), blank lines and CRLF ends taken; herald serve then pushes to them")
    func importThenServe() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-import-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_PUBLISH_KEYS": Self.publisher,
        ]
        let file = directory.appendingPathComponent("devices.jsonl")
        let good = [Self.line(1), Self.line(2, platform: "android", extra: #","token_kind":"token""#), Self.line(3)]
        let refused: [(String, Int, String)] = [
            (#"{"device_token":"zz","platform":"ios","watched_addresses":[]}"#, 2, "device_token"),
            (#"{"device_token":"\#(String(repeating: "ab", count: 32))","platform":"ios","watched_addresses":["nope"]}"#, 2, "watched_addresses[0]"),
            (#"{"device_token":"\#(String(repeating: "ab", count: 32))","platform":"ios","watched_addresses":[],"app":"other"}"#, 2, "app"),
            ("not json", 2, "body"),
        ]
        for (bad, number, field) in refused {
            // Line 1 is a device no later import brings: had it been written, it would get the push below.
            try Data(([Self.line(9), bad] + good[1...]).joined(separator: "\n").utf8).write(to: file)
            let (status, answer) = try await runHeraldOffPool(["devices", "import", file.path], environment: environment)
            #expect(status == 2 && answer["line"] as? Int == number && answer["field"] as? String == field, "\(bad): \(answer)")
            #expect(answer["imported"] as? Int == 0)
        }
        // Over the app's device limit at line 2: the line before it is not written either.
        try Data([Self.line(8), Self.line(7)].joined(separator: "\n").utf8).write(to: file)
        let (limited, limitAnswer) = try await runHeraldOffPool(["devices", "import", file.path], environment: environment.merging(["HERALD_MAX_DEVICES": "1"]) { $1 })
        #expect(limited == 2 && limitAnswer["code"] as? String == "device_limit" && limitAnswer["line"] as? Int == 2, "\(limitAnswer)")

        // Fixed: two devices from the file (CRLF ends, a blank line), one from standard input.
        try Data((good[0] + "\r\n\r\n" + good[1] + "\r\n").utf8).write(to: file)
        let (imported, answer) = try await runHeraldOffPool(["devices", "import", file.path], environment: environment)
        #expect(imported == 0 && answer["imported"] as? Int == 2 && (answer["apps"] as? [String: Int]) == ["default": 2], "\(answer)")
        let piped = try await offPool {
            try runProcess(try heraldExecutable(), ["devices", "import", "-"], environment: environment, input: Data((good[2] + "\n").utf8))
        }
        #expect(piped.status == 0 && piped.lastJSONLine["imported"] as? Int == 1, "\(String(decoding: piped.stderr, as: UTF8.self))")

        // The imported devices are the store's, and only they: herald serve pushes to each.
        let serve = try ServeProcess(environment: environment.merging(["HERALD_HTTP_PORT": "0"]) { $1 })
        defer { serve.process.kill(SIGTERM) }
        let (status, body) = try await http("POST", serve.api + "/v1/events", #"{"template":"custom","targets":{"keys":["session:all"]},"fields":{"aps":{"alert":"hi"}}}"#, bearer: Self.publisher)
        let deliveries = (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["deliveries"] as? Int
        #expect(status == 202 && deliveries == 3, "\(String(decoding: body, as: UTF8.self))")
        let (_, watched) = try await http("GET", serve.api + "/v1/push/status?device_token=" + String(repeating: "0", count: 62) + "03")
        #expect((try JSONSerialization.jsonObject(with: watched) as? [String: Any])?["watched_addresses"] as? [String] == ["session:all", "session:import-3"])
        let android = try #require(serve.fcmControl)
        try await eventually {
            let (_, list) = try await http("GET", android + "/notifications?token=" + "fcm-import_2:" + String(repeating: "I", count: 140))
            return ((try JSONSerialization.jsonObject(with: list) as? [String: Any])?["notifications"] as? [Any])?.count == 1
        }
    }
}
