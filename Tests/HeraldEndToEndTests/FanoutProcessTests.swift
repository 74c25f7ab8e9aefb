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

/// `herald serve` with its defaults on a fresh SQLite file where `count` devices of `default` watch
/// `key`: their tokens, the process, and its publisher key.
private func serving(_ count: Int, watching key: WatchKey, in directory: URL) async throws -> (tokens: [String], serve: ServeProcess, publisherKey: String) {
    let path = directory.appendingPathComponent("herald.sqlite").path
    let store = try SQLiteStore(path: path)
    try await store.migrate()
    let tokens = (0..<count).map(hexToken)
    _ = try await store.register(try tokens.map { token in
        Registration(
            app: "default", token: try APNsTokenRule().token(token), attributes: DeviceAttributes(production: false),
            watchSet: try WatchSet(watched: [key]))
    }, now: Date())
    let publisherKey = "publisher-key-fanout-0123"
    let serve = try ServeProcess(environment: ["HERALD_DATABASE_URL": "sqlite:" + path, "HERALD_HTTP_PORT": "0", "HERALD_PUBLISH_KEYS": publisherKey])
    return (tokens, serve, publisherKey)
}

/// A fan-out through `herald serve` with its defaults and the built-in APNs simulator.
@Suite("Fan-out through herald serve")
struct FanoutProcessTests {
    @Test("with the defaults, an event to a key 600 devices watch goes to a fan-out job: the 202 says so, each device gets the push once, and GET /v1/events/{id} ends with the job's totals")
    func fanoutThroughServe() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-fanout-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (tokens, serve, key) = try await serving(600, watching: .session("crowd"), in: directory)
        defer { serve.process.kill(SIGKILL) }

        let (status, data) = try await http(
            "POST", serve.api + "/v1/events", #"{"template":"custom","targets":{"keys":["session:crowd"]},"fields":{"aps":{"alert":"to all"}}}"#,
            bearer: key)
        let accepted = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(status == 202 && accepted["fanout"] as? Bool == true && accepted["deliveries"] as? Int == 0, "\(accepted)")
        let id = try #require(accepted["event_id"] as? String)

        var fanout: [String: Any] = [:]
        try await eventually {
            let (_, body) = try await http("GET", serve.api + "/v1/events/" + id, bearer: key)
            fanout = (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["fanout"] as? [String: Any] ?? [:]
            return fanout["finished"] as? Bool == true
        }
        #expect(fanout["devices"] as? Int == 600 && fanout["expanded"] as? Int == 600 && fanout["sent"] as? Int == 600, "\(fanout)")
        #expect(fanout["pending"] as? Int == 0 && fanout["failed"] as? Int == 0, "\(fanout)")
        let (_, listed) = try await http("GET", serve.control + "/notifications")
        let notifications = (try JSONSerialization.jsonObject(with: listed) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
        let received = notifications.compactMap { $0["token"] as? String }
        #expect(received.count == 600 && Set(received) == Set(tokens), "each device once")
        let (_, metrics) = try await http("GET", serve.admin + "/metrics")
        #expect(String(decoding: metrics, as: UTF8.self).contains("herald_fanout_pending_devices 0"))
    }

    @Test("coalesce_seconds through herald serve: 30 updates to one key as fast as they post, each device gets at most one push per window they spanned (the spacing is CoalescingTests', on an injected clock), the first and the latest")
    func coalescingThroughServe() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-coalesce-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (tokens, serve, key) = try await serving(3, watching: .session("score"), in: directory)
        defer { serve.process.kill(SIGKILL) }

        let window = 1.0
        let started = Date()
        for n in 0..<30 {
            let (status, _) = try await http(
                "POST", serve.api + "/v1/events",
                #"{"template":"custom","targets":{"keys":["session:score"]},"coalesce_seconds":1,"fields":{"aps":{"alert":"\#(n)"}}}"#, bearer: key)
            #expect(status == 202)
        }
        let posting = Date().timeIntervalSince(started)
        func received() async throws -> [String: [(at: Int64, alert: String)]] {
            let (_, listed) = try await http("GET", serve.control + "/notifications")
            let notifications = (try JSONSerialization.jsonObject(with: listed) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
            var byToken: [String: [(at: Int64, alert: String)]] = [:]
            for n in notifications {
                guard let token = n["token"] as? String, let at = n["received_at_ms"] as? Int, let payload = n["payload"] as? String,
                    let aps = (try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])?["aps"] as? [String: Any]
                else { continue }
                byToken[token, default: []].append((Int64(at), aps["alert"] as? String ?? ""))
            }
            return byToken
        }
        try await eventually { try await received().values.filter { $0.last?.alert == "29" }.count == tokens.count }
        let got = try await received()
        for token in tokens {
            let pushes = (got[token] ?? []).sorted { $0.at < $1.at }
            // At most one push per window the posting spanned (on a loaded machine each post may take a
            // window of its own; the spacing itself is CoalescingTests', on an injected clock).
            #expect(pushes.count <= 1 + Int((posting / window).rounded(.up)), "\(pushes.map(\.alert)) in \(posting) s")
            #expect(pushes.first?.alert == "0" && pushes.last?.alert == "29")
        }
    }
}
