import Foundation
import HeraldTestSupport
import Testing

/// Runs a Python fixture of this suite (`Fixtures/NAME`) and returns what it printed, trimmed;
/// nil, with an issue naming the PyPI package, when it fails.
func runFixture(_ name: String, _ arguments: [String], needs package: String) async throws -> String? {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
    let output = try await runProcessOffPool(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path] + arguments)
    guard output.status == 0 else {
        Issue.record("\(name) failed (pip install \(package)): \(String(decoding: output.stderr, as: UTF8.self))")
        return nil
    }
    return String(decoding: output.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}
