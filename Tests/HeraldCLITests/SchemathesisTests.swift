import Foundation
import HeraldTestSupport
import Testing

/// The OpenAPI document is the contract: schemathesis (`pip install schemathesis kaspa`) generates
/// requests from the document a live `herald serve` serves (SQLite, built-in simulators) and runs
/// every check it has: requests the document allows are accepted, requests it forbids refused,
/// every answer (errors, 404s and 405s included) as documented. Fixtures/schemathesis.toml keeps
/// schemathesis's expected statuses but for three rules no schema can state, each named there;
/// the generator for `format: kaspa-address` is beside it.
@Suite(
    "Schemathesis against herald serve", .serialized,
    // CI runs it on its own after the rest (.ci/run): its thousands of requests beside the other
    // process suites starved a 2-core machine past the push services' request timeouts.
    .enabled(if: ProcessInfo.processInfo.environment["HERALD_TEST_SCHEMATHESIS_SEPARATELY"] == nil))
struct SchemathesisTests {
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
        ])
        defer { serve.process.kill(SIGKILL) }

        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        var environment = ProcessInfo.processInfo.environment
        environment["SCHEMATHESIS_HOOKS"] = "schemathesis_hooks"
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
