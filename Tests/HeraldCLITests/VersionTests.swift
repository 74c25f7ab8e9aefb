import Foundation
import HeraldCore
import HeraldTestSupport
import Testing

@Suite("herald version")
struct VersionTests {
    @Test("prints the release version and the commit the binary was built from")
    func versionAndCommit() throws {
        let output = try runProcess(try heraldExecutable(), ["version"])
        #expect(output.status == 0)
        let line = String(decoding: output.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line.hasPrefix("herald \(HeraldVersion.current) (commit "), "\(line)")
        // Built from this checkout: the commit is the one git names (a tarball without .git says unknown).
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let git = try? runProcess(URL(fileURLWithPath: "/usr/bin/git"), ["-C", root.path, "rev-parse", "--short=12", "HEAD"])
        if let git, git.status == 0 {
            let head = String(decoding: git.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(line.contains("(commit \(head)"), "\(line) is not built from \(head)")
        } else {
            #expect(line.hasSuffix("(commit unknown)"), "\(line)")
        }
    }
}
