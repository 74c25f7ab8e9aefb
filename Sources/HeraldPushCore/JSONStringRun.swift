/// Where a JSON string's plain text stops, found eight bytes a step.
public enum JSONStringRun {
    /// The offset of the first byte at or after `start` that is a quote, a backslash or a control
    /// character (below 0x20), which a JSON string's plain run cannot hold; `bytes.count` when
    /// there is none. Each 8-byte word is tested for all three at once (SWAR): the lowest flagged
    /// byte of each test is exact, and a false flag can only sit above a true one. The parsers
    /// stepped a byte at a time through every key and value, a few instructions a byte.
    public static func end(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let high: UInt64 = 0x8080_8080_8080_8080
        var i = start
        while i + 8 <= bytes.count {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let quote = word ^ (0x22 &* ones)
            let backslash = word ^ (0x5C &* ones)
            let flagged = ((quote &- ones) & ~quote | (backslash &- ones) & ~backslash | (word &- 0x20 &* ones) & ~word) & high
            if flagged != 0 { return i + flagged.trailingZeroBitCount / 8 }
            i += 8
        }
        while i < bytes.count {
            let byte = bytes[i]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { return i }
            i += 1
        }
        return bytes.count
    }
}
