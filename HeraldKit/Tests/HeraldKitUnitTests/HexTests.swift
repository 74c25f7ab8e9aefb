import Foundation
import KasiaProtocol
import Testing

@Suite struct HexTests {
    /// Every byte, as an array, `Data`, raw bytes and a sequence with no contiguous storage:
    /// the same lowercase text, and it decodes back.
    @Test func everyByteInEveryKindOfSequence() {
        let bytes = (0...255).map(UInt8.init)
        let expected = bytes.map { String(format: "%02x", $0) }.joined()
        #expect(Hex.encode(bytes) == expected)
        #expect(Hex.encode(Data(bytes)) == expected)
        #expect(bytes.withUnsafeBytes { Hex.encode($0) } == expected)
        #expect(Hex.encode(bytes.lazy.map { $0 }) == expected)
        #expect(Hex.encode(bytes[1...]) == String(expected.dropFirst(2)))
        #expect(Hex.encode([UInt8]()) == "")
        #expect(Hex.decode(expected) == bytes)
    }
}
