import Foundation
import HeraldTestSupport
import Testing

/// The OpenAPI document is the contract: schemathesis (`pip install schemathesis kaspa`) generates
/// requests from the document a live `herald serve` serves (SQLite, built-in simulators) and runs
/// every check it has: requests the document allows are accepted, requests it forbids refused,
/// every answer (errors, 404s and 405s included) as documented. Fixtures/schemathesis.toml keeps
/// schemathesis's expected statuses but for the rules no schema can state (a byte limit, one of
/// two parameters, two fields equal), each named there with the one status it adds; the
/// generators for the document's own formats (Kaspa addresses, P-256 points, auth secrets,
/// endpoints Herald may send to) are beside it.
@Suite(
    "Schemathesis against herald serve", .serialized,
    // CI runs it on its own after the rest (.ci/run): its thousands of requests beside the other
    // process suites starved a 2-core machine past the push services' request timeouts.
    .enabled(if: ProcessInfo.processInfo.environment["HERALD_TEST_SCHEMATHESIS_SEPARATELY"] == nil))
struct SchemathesisTests {
    /// The watch-key limit the served document states per list, and the hooks hold lists to together.
    static let maxWatchKeys = 30

    @Test("every schemathesis check passes on every operation of /openapi.json")
    func allChecks() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-schemathesis-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let publisherKey = "publisher-key-schemathesis-01"
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": publisherKey, "HERALD_GHOSTTALK_SEND_ENABLED": "true",
            // Thousands of registrations from one address: the limiter's 429 would hide the answers.
            "HERALD_REGISTRATION_RATE": "0", "HERALD_PUBLISH_RATE": "0",
            "HERALD_MATRIX_APPS": "im.example.ios=apns,im.example.android*=fcm,im.example.web=webpush",
            // Lists whose limits multiply to less than the 64 KiB body limit: every body the
            // document allows fits (a longer one is 413, a rule no schema can state).
            "HERALD_MAX_WATCH_KEYS": "\(Self.maxWatchKeys)", "HERALD_MAX_ALIASES": "10",
        ])
        defer { serve.process.kill(SIGKILL) }
        // Subscriptions on the built-in Web Push simulator's host: the one inside host Herald
        // sends to without being told (the test machine resolves no other name).
        let simulator = try #require(serve.webPushControl)
        let (_, vapid) = try await http("GET", serve.api + "/v1/push/vapid-public-key")
        let vapidKey = try #require((try JSONSerialization.jsonObject(with: vapid) as? [String: Any])?["public_key"] as? String)
        let (_, subscribed) = try await http("POST", simulator + "/subscribe", #"{"application_server_key":"\#(vapidKey)"}"#)
        let endpoint = try #require((try JSONSerialization.jsonObject(with: subscribed) as? [String: Any])?["endpoint"] as? String)
        let webPushHost = try #require(URLComponents(string: endpoint).map { "\($0.host ?? ""):\($0.port ?? 443)" })

        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        var environment = ProcessInfo.processInfo.environment
        environment["SCHEMATHESIS_HOOKS"] = "schemathesis_hooks"
        environment["HERALD_TEST_WEBPUSH_HOST"] = webPushHost
        environment["HERALD_TEST_MAX_WATCH_KEYS"] = "\(Self.maxWatchKeys)"
        environment["PYTHONPATH"] = fixtures.path
        // Bounded: a fixed seed and number of examples per operation, the coverage phase's
        // boundary cases besides; each request has schemathesis's own time-out.
        let output = try await runProcessOffPool(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", "-m", "schemathesis.cli", "--config-file", fixtures.appendingPathComponent("schemathesis.toml").path,
                "run", serve.api + "/openapi.json", "--checks", "all", "--seed", "20261124", "--max-examples", "40",
                "--header", "Authorization: Bearer \(publisherKey)", "--no-color",
            ],
            environment: environment)
        let report = String(decoding: output.stdout + output.stderr, as: UTF8.self)
        // The failures first (each operation, the request that failed and the answer, with a curl
        // line to repeat it), then the summary: the report's head is progress bars, its tail totals.
        let failures = report.range(of: "FAILURES").map { String(report[$0.lowerBound...].prefix(16_000)) } ?? ""
        #expect(
            output.status == 0,
            "schemathesis (requirements-test.txt) found failures:\n\(failures)\n…\n\(report.suffix(failures.isEmpty ? 20_000 : 4_000))")
        // It ran, on every operation it found in the document (26 less the document itself).
        let selected = report.firstMatch(of: /Selected: (\d+)\/(\d+)/).map { (Int($0.1) ?? 0, Int($0.2) ?? -1) }
        let tested = report.firstMatch(of: /Tested: (\d+)/).map { Int($0.1) ?? 0 }
        #expect(selected.map { $0.0 == $0.1 && $0.1 >= 25 } == true && tested == selected?.1, "\(report.suffix(3_000))")
    }
}
