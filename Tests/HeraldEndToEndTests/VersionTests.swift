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
        // Built from this checkout: the commit is one git knows here (a tarball without .git says
        // unknown). Not necessarily HEAD: a binary built before the last commit names the one before.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let inCheckout = (try? runProcess(URL(fileURLWithPath: "/usr/bin/git"), ["-C", root.path, "rev-parse", "HEAD"]))?.status == 0
        guard inCheckout else {
            #expect(line.hasSuffix("(commit unknown)"), "\(line)")
            return
        }
        let commit = try #require(line.firstMatch(of: /\(commit ([0-9a-f]{12})(-dirty)?\)$/)?.1, "\(line)")
        let known = try runProcess(URL(fileURLWithPath: "/usr/bin/git"), ["-C", root.path, "cat-file", "-e", "\(commit)^{commit}"])
        #expect(known.status == 0, "\(line) names no commit of this repository")
    }
}
