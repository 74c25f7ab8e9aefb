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

/// The API's limits as an operator sets them, against a live `herald serve`: the batch route's
/// own body limit, and watch keys, aliases and body sizes from the environment.
@Suite("Limits", .serialized)
struct LimitsTests {
    static let sender = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"

    static func start(_ extra: [String: String] = [:]) throws -> (ServeProcess, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-limits-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": "publisher-key-limits-0123", "HERALD_REGISTRATION_RATE": "0",
        ].merging(extra) { _, new in new })
        return (serve, directory)
    }

    /// A Kasia message at the inline-payload limit (1,750 bytes, the largest whose push fits APNs' 4 KiB).
    static func largestKasiaEvent(_ i: Int) -> String {
        let txID = String(format: "%064x", i + 1)
        return #"{"template":"kasia.contextual_message","fields":{"tx_id":"\#(txID)","sender":"\#(sender)","alias":"a1","payload":"\#(String(repeating: "ab", count: 1_750))","timestamp":1704067200,"daa_score":\#(i + 1)}}"#
    }

    @Test("/v1/events:batch takes 1,000 events of the largest size (3.7 MB); past its 8 MiB limit it is a 413 in the envelope; other routes keep 64 KiB")
    func batchBodyLimit() async throws {
        let (serve, directory) = try Self.start()
        defer {
            serve.process.kill(SIGKILL)
            try? FileManager.default.removeItem(at: directory)
        }
        let key = "publisher-key-limits-0123"
        let events = (0..<1_000).map(Self.largestKasiaEvent)
        let body = #"{"events":[\#(events.joined(separator: ","))]}"#
        #expect(body.utf8.count > 3_600_000)
        let (status, data) = try await http("POST", serve.api + "/v1/events:batch", body, bearer: key)
        #expect(status == 202)
        let accepted = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect((accepted["events"] as? [[String: Any]])?.count == 1_000)

        // Past 8 MiB: refused whole, in the envelope; nothing committed (the stats count no new event).
        let padded = #"{"events":[\#(Self.largestKasiaEvent(5_000))],"pad":"\#(String(repeating: "x", count: 8 * 1_048_576))"}"#
        let (tooLarge, refusal) = try await http("POST", serve.api + "/v1/events:batch", padded, bearer: key)
        #expect(tooLarge == 413)
        let error = (try JSONSerialization.jsonObject(with: refusal) as? [String: Any])?["error"] as? [String: Any]
        #expect(error?["code"] as? String == "body_too_large", "\(String(decoding: refusal, as: UTF8.self))")

        // One event alone keeps the 64 KiB limit.
        let single = #"{"template":"custom","targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"}},"pad":"\#(String(repeating: "x", count: 70_000))"}"#
        let (singleStatus, _) = try await http("POST", serve.api + "/v1/events", single, bearer: key)
        #expect(singleStatus == 413)
    }

    @Test("1,000 untargeted agent.events against 5,000 devices: 413 at the delivery cap, and memory grows with the cap (100,000), not with devices × events (5,000,000)")
    func deliveryCapBoundsMemory() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cap-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("herald.sqlite").path
        let store = try SQLiteStore(path: path)
        try await store.migrate()
        _ = try await store.register(try (0..<5_000).map { i in
            Registration(app: "default", token: try APNsTokenRule().token(hexToken(i)), attributes: DeviceAttributes(production: false), watchSet: .empty)
        }, now: Date())
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + path, "HERALD_HTTP_PORT": "0", "HERALD_PUBLISH_KEYS": "publisher-key-limits-0123",
        ])
        defer { serve.process.kill(SIGKILL) }
        let before = try serve.process.peakResidentBytes()
        let event = #"{"template":"agent.event","fields":{"hook_event_name":"Stop","device_name":"mac","session_id":"s"}}"#
        let body = #"{"events":[\#(Array(repeating: event, count: 1_000).joined(separator: ","))]}"#
        for _ in 0..<3 {
            let (status, data) = try await http("POST", serve.api + "/v1/events:batch", body, bearer: "publisher-key-limits-0123")
            #expect(status == 413)
            let error = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["error"] as? [String: Any]
            // 100,000 / 5,000: the 21st event is the one past the cap.
            #expect(error?["code"] as? String == "too_many_deliveries" && error?["field"] as? String == "events[20]", "\(error ?? [:])")
        }
        // 5,000,000 routed devices held at once took 440–750 MiB; 100,000 take a few dozen.
        let growth = try serve.process.peakResidentBytes() - before
        #expect(growth < 96 << 20, "peak resident memory grew \(growth >> 20) MiB")
        #expect(try await store.stats().deliveries.isEmpty)
    }

    @Test("HERALD_MAX_WATCH_KEYS, HERALD_MAX_ALIASES and HERALD_MAX_BODY_BYTES set the limits registration enforces")
    func limitsFromEnvironment() async throws {
        let (serve, directory) = try Self.start([
            "HERALD_MAX_WATCH_KEYS": "2", "HERALD_MAX_ALIASES": "1", "HERALD_MAX_BODY_BYTES": "2048",
        ])
        defer {
            serve.process.kill(SIGKILL)
            try? FileManager.default.removeItem(at: directory)
        }
        func register(_ token: String, keys: [String], routes: String = "[]", pad: Int = 0) async throws -> (Int, String) {
            let list = keys.map { #""\#($0)""# }.joined(separator: ",")
            let body = #"{"device_token":"\#(token)","platform":"ios","watched_addresses":[\#(list)],"contextual_routes":\#(routes),"pad":"\#(String(repeating: "p", count: pad))"}"#
            let (status, data) = try await http("POST", serve.api + "/v1/push/register", body)
            return (status, String(decoding: data, as: UTF8.self))
        }
        let token = String(repeating: "7c", count: 32)
        #expect(try await register(token, keys: ["session:a", "session:b"]).0 == 200)
        let (tooMany, refusal) = try await register(token, keys: ["session:a", "session:b", "session:c"])
        #expect(tooMany == 400 && refusal.contains(#""field":"watched_addresses""#) && refusal.contains("at most 2"), "\(refusal)")
        let oneAlias = #"[{"peer_address":"\#(Self.sender)","aliases":["a1"]}]"#
        let twoAliases = #"[{"peer_address":"\#(Self.sender)","aliases":["a1","a2"]}]"#
        #expect(try await register(token, keys: [], routes: oneAlias).0 == 200)
        let (aliases, aliasRefusal) = try await register(token, keys: [], routes: twoAliases)
        #expect(aliases == 400 && aliasRefusal.contains("contextual_routes"), "\(aliasRefusal)")
        #expect(try await register(token, keys: ["session:a"], pad: 2_100).0 == 413)
        #expect(try await register(token, keys: ["session:a"], pad: 1_500).0 == 200)
    }

    @Test("HERALD_EVENT_LOOPS sets the event-loop threads that carry every socket; one carries a registration, a publish and its push", arguments: [1, 3])
    func eventLoops(count: Int) async throws {
        let (serve, directory) = try Self.start(["HERALD_EVENT_LOOPS": "\(count)"])
        defer {
            serve.process.kill(SIGKILL)
            try? FileManager.default.removeItem(at: directory)
        }
        let tasks = "/proc/\(serve.process.process.processIdentifier)/task"
        let threads = try FileManager.default.contentsOfDirectory(atPath: tasks).compactMap {
            try? String(contentsOfFile: tasks + "/" + $0 + "/comm", encoding: .utf8)
        }
        // NIO names a group's loop threads NIO-ELT-<group>-#<n>; the built-in simulators share the group.
        #expect(threads.filter { $0.hasPrefix("NIO-ELT-") }.count == count, "\(threads.sorted())")
        let token = String(repeating: "5e", count: 32)
        let registration = #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["session:loops"]}"#
        #expect(try await http("POST", serve.api + "/v1/push/register", registration).0 == 200)
        let event = #"{"template":"custom","targets":{"keys":["session:loops"]},"fields":{"aps":{"alert":"one loop"}}}"#
        #expect(try await http("POST", serve.api + "/v1/events", event, bearer: "publisher-key-limits-0123").0 == 202)
        try await eventually { try await !AndroidDeliveryTests.apnsPushes(serve, token: token).isEmpty }
        #expect(try await AndroidDeliveryTests.apnsPushes(serve, token: token).count == 1)
    }

    @Test("a limit out of range in the environment ends the start with exit 2, naming the variable", arguments: [
        ("HERALD_MAX_WATCH_KEYS", "0"), ("HERALD_MAX_ALIASES", "many"), ("HERALD_MAX_BODY_BYTES", "100"),
        ("HERALD_MAX_BATCH_BODY_BYTES", "9223372036854775808"),
    ])
    func badLimit(variable: String, value: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-limits-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (code, json) = try runHerald(["serve"], environment: [
            variable: value, "HERALD_HTTP_PORT": "0", "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == variable, "\(json)")
    }
}
