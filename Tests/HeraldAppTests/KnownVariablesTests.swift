import Foundation
@testable import HeraldApp
import HeraldPushCore
import Testing

@Suite("HeraldApp: the HERALD_* variables, known and documented")
struct KnownVariablesTests {
    /// The variables docs/configuration.md's table names.
    static func documented() throws -> Set<String> {
        let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/configuration.md")
        let text = try String(contentsOf: page, encoding: .utf8)
        let rows = text.split(separator: "\n").filter { $0.hasPrefix("| `HERALD_") }
        return Set(rows.flatMap { row in
            row.split(separator: "|", maxSplits: 2)[0].matches(of: /`(HERALD_[A-Z0-9_]*[A-Z0-9])`/).map { String($0.1) }
        })
    }

    @Test("every variable Herald reads has its row in docs/configuration.md, and every row is a variable Herald reads")
    func documentedAndKnown() throws {
        let known = KnownVariables.all(.builtIn), documented = try Self.documented()
        #expect(known.subtracting(documented).isEmpty, "read but undocumented: \(known.subtracting(documented).sorted())")
        #expect(documented.subtracting(known).isEmpty, "documented but refused: \(documented.subtracting(known).sorted())")
    }

    @Test("an unknown variable is refused naming the nearest known one; HERALD_TEST_* and other prefixes are not Herald's")
    func nearest() {
        #expect(KnownVariables.refusal(["HERALD_PORT": "1"], pushServices: .builtIn)?.message.contains("did you mean HERALD_HTTP_PORT?") == true)
        #expect(KnownVariables.refusal(["HERALD_APNS_KEYPATH": "x"], pushServices: .builtIn)?.field == "HERALD_APNS_KEYPATH")
        #expect(KnownVariables.refusal(["HERALD_TEST_POSTGRES_URL": "x", "HERALDRY": "x", "PORT": "1"], pushServices: .builtIn) == nil)
        #expect(KnownVariables.distance("kitten", "sitting") == 3)
        #expect(KnownVariables.distance("", "abc") == 3)
    }
}
