@testable import HeraldCLI
import Logging
import Synchronization
import Testing

@Suite("Text log lines")
struct TextLogHandlerTests {
    /// The lines a handler wrote.
    final class Lines: TextOutputStream, Sendable {
        let written = Mutex<[String]>([])
        func write(_ string: String) { written.withLock { $0.append(string) } }
    }

    @Test("a logger's metadata (a request's request_id) is on each line it writes, beside the line's own, control characters escaped")
    func metadataOnEachLine() {
        let lines = Lines()
        var logger = Logger(label: "herald") { TextLogHandler(label: $0, level: .info, output: lines) }
        logger[metadataKey: "request_id"] = "trace-7"
        logger.info("first", metadata: ["path": "/v1/events"])
        logger[metadataKey: "peer"] = "bad\nline"
        logger.warning("second\nforged")
        logger.debug("below the level")
        let written = lines.written.withLock { $0 }
        #expect(written.count == 2)
        #expect(written.first?.contains("herald: path=/v1/events request_id=trace-7 [HeraldEndToEndTests] first") == true)
        #expect(written.last?.contains(#"herald: peer=bad\nline request_id=trace-7 [HeraldEndToEndTests] second\nforged"#) == true)
        #expect(written.allSatisfy { $0.filter { $0 == "\n" }.count == 1 })
        #expect(logger[metadataKey: "request_id"] == "trace-7")
    }

    @Test("a handler's own keys: one set again is replaced, one set to nil is gone, and its metadata reads and writes as swift-log's dictionary")
    func ownKeys() {
        var handler = TextLogHandler(label: "herald", level: .info, output: Lines())
        handler[metadataKey: "a"] = "1"
        handler[metadataKey: "b"] = "2"
        handler[metadataKey: "a"] = "3"
        #expect(handler.metadata == ["a": "3", "b": "2"])
        handler[metadataKey: "b"] = nil
        handler[metadataKey: "never set"] = nil
        #expect(handler.metadata == ["a": "3"])
        handler.metadata = ["c": "4"]
        #expect(handler[metadataKey: "a"] == nil)
        #expect(handler[metadataKey: "c"] == "4")
    }

    @Test("line and paragraph separators, bidi controls and zero-width characters a peer sends are escaped, other text kept",
          arguments: ["\u{2028}", "\u{2029}", "\u{202E}", "\u{2066}", "\u{200B}", "\u{200F}", "\u{FEFF}", "\u{85}"])
    func hiddenCharacters(hidden: String) {
        let lines = Lines()
        let logger = Logger(label: "herald") { TextLogHandler(label: $0, level: .info, output: lines) }
        logger.info("reason: Bad\(hidden)Token é 日本", metadata: ["origin": "x\(hidden)y"])
        let line = lines.written.withLock { $0 }.first ?? ""
        #expect(!line.unicodeScalars.contains { hidden.unicodeScalars.contains($0) }, "\(line.unicodeScalars.map { String($0.value, radix: 16) })")
        #expect(line.contains("\\u{\(String(hidden.unicodeScalars.first!.value, radix: 16))}"))
        #expect(line.contains("é 日本"))
    }
}
