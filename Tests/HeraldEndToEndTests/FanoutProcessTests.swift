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

/// A fan-out through `herald serve` with its defaults and the built-in APNs simulator.
@Suite("Fan-out through herald serve")
struct FanoutProcessTests {
    @Test("with the defaults, an event to a key 600 devices watch goes to a fan-out job: the 202 says so, each device gets the push once, and GET /v1/events/{id} ends with the job's totals")
    func fanoutThroughServe() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-fanout-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("herald.sqlite").path
        let store = try SQLiteStore(path: path)
        try await store.migrate()
        let tokens = (0..<600).map(hexToken)
        _ = try await store.register(try tokens.map { token in
            Registration(
                app: "default", token: try APNsTokenRule().token(token), attributes: DeviceAttributes(production: false),
                watchSet: try WatchSet(watched: [.session("crowd")]))
        }, now: Date())
        let key = "publisher-key-fanout-0123"
        let serve = try ServeProcess(environment: ["HERALD_DATABASE_URL": "sqlite:" + path, "HERALD_HTTP_PORT": "0", "HERALD_PUBLISH_KEYS": key])
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
}
