import Foundation
import HeraldTestSupport
import KaspaNodeSimulator
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What an operator's Prometheus scrapes from a running `herald serve` (SQLite, built-in APNs
/// simulator, following a Kaspa node): the metrics the dashboard and the alert rules in
/// `deploy/` query exist, with the values a push that went out leaves behind.
@Suite("Monitoring: /metrics against deploy/", .serialized)
struct MonitoringTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Metric names in PromQL text (`herald_…`, `http_…`).
    static func metricNames(in text: String) -> Set<String> {
        Set(text.matches(of: /\b(?:herald|http)_[a-z0-9_]+\b/).map { String($0.output) })
    }

    /// Every query of the dashboard (panels and the app variable).
    static func dashboardQueries() throws -> [String] {
        let data = try Data(contentsOf: repository.appendingPathComponent("deploy/grafana/herald.json"))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        var queries = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        let variables = (dashboard["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        queries += variables.compactMap { $0["definition"] as? String }
        return queries
    }

    /// Sample names and label names in Prometheus' text format (`name{label="…",…} value`).
    static func exported(_ exposition: String) -> (names: Set<String>, labels: Set<String>) {
        let samples = exposition.split(separator: "\n").filter { !$0.hasPrefix("#") }
        let names = Set(samples.compactMap { $0.split(whereSeparator: { $0 == "{" || $0 == " " }).first.map(String.init) })
        let labels = Set(samples.flatMap { $0.matches(of: /[{,]([a-z_]+)="/).map { String($0.output.1) } })
        return (names, labels)
    }

    @Test("after a push went out, every metric the dashboard and the alert rules name is exported, with the values that push left")
    func dashboardAndRulesMatchExports() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-monitoring-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let node = try await KaspaNodeSimulator.start()
        let publisherKey = "publisher-key-monitoring-0123"
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": publisherKey, "HERALD_KASPA_WRPC_URL": node.url,
        ])
        defer { serve.process.kill(SIGKILL) }

        let token = String(repeating: "5a", count: 32)
        let (registered, _) = try await http("POST", serve.api + "/v1/push/register",
            #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["session:monitoring"]}"#)
        #expect(registered == 200)
        let (published, _) = try await http("POST", serve.api + "/v1/events",
            #"{"template":"custom","targets":{"keys":["session:monitoring"]},"fields":{"aps":{"alert":"hello"}}}"#, bearer: publisherKey)
        #expect(published == 202)

        // Once the push is at the simulator and its outcome recorded, the scrape shows it.
        var exposition = ""
        for _ in 0..<200 {
            exposition = String(decoding: try await http("GET", serve.admin + "/metrics").1, as: UTF8.self)
            if exposition.contains(#"herald_delivery_attempts_total{outcome="sent",reason="accepted"} 1"#),
                exposition.contains(#"herald_queue_depth{app="default"} 0.0"#)
            {
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let lines = Set(exposition.split(separator: "\n").map(String.init))
        for line in [
            #"herald_delivery_attempts_total{outcome="sent",reason="accepted"} 1"#,
            #"herald_events_accepted_total{template="custom"} 1"#,
            #"herald_queue_depth{app="default"} 0.0"#,
            #"herald_oldest_pending_seconds{app="default"} 0.0"#,
            #"herald_publish_duration_seconds_count 1"#,
            #"herald_delivery_latency_seconds_count{provider="ios"} 1"#,
            #"herald_provider_request_duration_seconds_count{provider="ios"} 1"#,
            #"herald_deliveries_in_flight 0.0"#,
            #"herald_token_refreshes_total{app="default",provider="ios"} 1"#,
            #"herald_app_sends_paused{app="default",platform="ios"} 0.0"#,
        ] {
            #expect(lines.contains(line), "\(line) not in the scrape")
        }
        // The pool's connections to the simulator are open (2 by default).
        let open = lines.first { $0.hasPrefix(#"herald_provider_connections_open{provider="ios"} "#) }?.split(separator: " ").last.flatMap { Double($0) }
        #expect((open ?? 0) >= 1)
        #expect(exposition.contains(#"http_requests_total{http_route="/v1/events",http_request_method="POST",http_response_status_code="202"} 1"#))
        #expect(exposition.contains(
            #"http_server_request_duration_seconds_count{http_route="/v1/events",http_request_method="POST",http_response_status_code="202"} 1"#))
        // The scrape in progress is the one active request.
        #expect(exposition.contains(#"http_server_active_requests{http_request_method="GET"} 1"#))

        // Ready: the store and the three built-in simulators, named on the admin listener; the
        // public listener says ready and nothing of the instance's apps or simulators.
        let (publicStatus, publicBody) = try await http("GET", serve.api + "/readyz")
        #expect(publicStatus == 200 && String(decoding: publicBody, as: UTF8.self) == #"{"ready":true}"#)
        let (readyStatus, readyBody) = try await http("GET", serve.admin + "/readyz")
        #expect(readyStatus == 200)
        let checked = (try JSONSerialization.jsonObject(with: readyBody) as? [String: Any])?["checked"] as? [String]
        #expect(checked == ["store", "built-in APNs simulator listening", "built-in FCM simulator listening", "built-in Web Push simulator listening"])

        let (names, labels) = Self.exported(exposition)
        let dashboard = try Self.dashboardQueries()
        #expect(dashboard.count >= 15)
        let rules = try String(contentsOf: Self.repository.appendingPathComponent("deploy/prometheus/herald-rules.yml"), encoding: .utf8)
        let queried = Self.metricNames(in: dashboard.joined(separator: "\n")).union(Self.metricNames(in: rules))
        #expect(queried.count >= 15, "\(queried.sorted())")
        // A name the queries use is a metric Herald exports or one of its labels (`http_route`).
        let missing = queried.subtracting(names).subtracting(labels)
        #expect(missing.isEmpty, "queried but not exported: \(missing.sorted())")
        #expect(queried.intersection(names).count >= 15)
        await node.shutdown()
    }
}
