import HeraldPushCore
import Testing

@Suite("Where a JSON string's plain run ends")
struct JSONStringRunTests {
    /// A byte at a time: what the word-at-a-time scan must agree with.
    static func end(_ bytes: [UInt8], from start: Int) -> Int {
        bytes[start...].firstIndex { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 } ?? bytes.count
    }

    @Test("the first quote, backslash or control byte from every start, at every alignment, beside UTF-8 and DEL")
    func agreesWithAByteAtATime() {
        // A fixed generator (SplitMix64): the same bytes on every run.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        // Mostly plain text, with the bytes next to each stop byte's value (0x1F/0x20, 0x21/0x22/0x23,
        // 0x5B/0x5C/0x5D), 0x7F and 0x80 – 0xFF that a borrow or a missing mask would confuse.
        let plain: [UInt8] = Array("aZ09 {}:,é".utf8) + [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF]
        let stops: [UInt8] = [0x22, 0x5C, 0x00, 0x01, 0x0A, 0x1F]
        for _ in 0..<2_000 {
            let count = Int(next() % 40)
            var bytes = (0..<count).map { _ in plain[Int(next() % UInt64(plain.count))] }
            for _ in 0..<Int(next() % 3) where !bytes.isEmpty {
                bytes[Int(next() % UInt64(bytes.count))] = stops[Int(next() % UInt64(stops.count))]
            }
            for start in 0...bytes.count {
                let found = bytes.withUnsafeBytes { JSONStringRun.end($0, from: start) }
                #expect(found == Self.end(bytes, from: start), "\(bytes) from \(start)")
            }
        }
    }

    @Test("a string with each stop byte in each of a word's eight places parses, or fails, as JSON says")
    func stopsInEveryPlace() throws {
        for place in 0..<16 {
            let prefix = String(repeating: "x", count: place)
            #expect(try JSONValue(parsing: Array(#"{"k":"\#(prefix)\"q"}"#.utf8)) == .object([.init("k", .string(prefix + "\"q"))]))
            #expect(try JSONValue(parsing: Array(#"{"k":"\#(prefix)\\b"}"#.utf8)) == .object([.init("k", .string(prefix + "\\b"))]))
            let control = Array(#"{"k":"\#(prefix)"#.utf8) + [0x0A] + Array(#""}"#.utf8)
            let error = #expect(throws: JSONParseError.self) { try JSONValue(parsing: control) }
            #expect(error?.offset == 6 + place)
            #expect(try JSONValue(parsing: Array(#"{"k":"\#(prefix)é\#(prefix)"}"#.utf8)) == .object([.init("k", .string(prefix + "é" + prefix))]))
        }
    }
}
