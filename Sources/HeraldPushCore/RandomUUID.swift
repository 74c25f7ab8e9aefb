public import Foundation

extension UUID {
    /// A random (version 4) UUID drawn from the system generator. Foundation's `UUID()` on
    /// Linux opens, reads and closes `/dev/urandom` for each one; this takes its 16 bytes from
    /// `randomWords`, which draws `getrandom` 4 KiB at a time.
    public static func random() -> UUID {
        let words = randomWords.next()
        return random(high: words.0, low: words.1)
    }

    /// The system generator's bytes for every id this process makes. A Matrix notify makes
    /// three (its request's, its event's, its deliveries'); one `getrandom` each was about
    /// 0.4 µs of system call and a fifth of the notify's system calls.
    private static let randomWords = RandomWordPool()

    /// A time-ordered (version 7, RFC 9562) UUID: the unix milliseconds of `date` in its first
    /// 48 bits, then 74 random bits. Ids made one after another sort together, so an index on
    /// them takes each new one on its last page (a group commit writes that page once, not a
    /// random page per id), while the random bits keep them unguessable.
    public static func timeOrdered(at date: Date) -> UUID {
        let words = randomWords.next()
        // 48 bits of milliseconds (the nearest: a whole millisecond's `Date` is a hair below it);
        // a date before 1970 or past the year 10889 is pinned to the range.
        let since1970 = (date.timeIntervalSince1970 * 1000).rounded()
        let milliseconds: UInt64 = since1970.isFinite && since1970 > 0 ? UInt64(min(since1970, Double(0xFFFF_FFFF_FFFF))) : 0
        let high = milliseconds << 16 | 0x7000 | words.0 & 0x0FFF
        let low = words.1 & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        return UUID(high: high, low: low)
    }

    /// The UUID whose 16 bytes are `high` then `low` (big-endian), with the version-4 and variant bits set.
    static func random(high: UInt64, low: UInt64) -> UUID {
        let h = high & 0xFFFF_FFFF_FFFF_0FFF | 0x0000_0000_0000_4000
        let l = low & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        return UUID(high: h, low: l)
    }

    /// The UUID whose 16 bytes are `high` then `low`, big-endian, as they are.
    init(high: UInt64, low: UInt64) {
        self.init(uuid: unsafeBitCast((high.bigEndian, low.bigEndian), to: uuid_t.self))
    }

    /// The UUID of 16 bytes.
    public init(bytes b: [UInt8]) {
        precondition(b.count == 16, "a UUID is 16 bytes")
        self.init(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// The lowercase 8-4-4-4-12 form (APNs's `apns-id`, Herald's event ids), without the
    /// uppercase string and its lowercased copy.
    public var lowercasedString: String {
        let hex = Self.hexDigits
        return withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { out in
                var n = 0
                for (i, byte) in bytes.enumerated() {
                    if i == 4 || i == 6 || i == 8 || i == 10 {
                        out[n] = UInt8(ascii: "-")
                        n += 1
                    }
                    out[n] = hex[Int(byte >> 4)]
                    out[n + 1] = hex[Int(byte & 0x0f)]
                    n += 2
                }
                return n
            }
        }
    }
}
