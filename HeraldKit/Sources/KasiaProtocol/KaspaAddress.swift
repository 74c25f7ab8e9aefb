/// A Kaspa address: `prefix:data`, CashAddr-style bech32 with a 40-bit checksum
/// (bech32 with Kaspa's prefix and checksum).
public struct KaspaAddress: Hashable, Sendable, CustomStringConvertible {
    /// The network prefixes Kaspa uses.
    public enum Prefix: String, Sendable, CaseIterable {
        case mainnet = "kaspa", testnet = "kaspatest", simnet = "kaspasim", devnet = "kaspadev"
    }

    /// Address versions and their payload lengths.
    public enum Version: UInt8, Sendable {
        /// Schnorr x-only public key (what Kasia uses).
        case publicKey = 0
        /// ECDSA compressed public key.
        case publicKeyECDSA = 1
        case scriptHash = 8

        var payloadLength: Int { self == .publicKeyECDSA ? 33 : 32 }
    }

    public let prefix: Prefix
    public let version: Version
    public let payload: [UInt8]
    /// The canonical text form.
    public let string: String

    public var description: String { string }

    /// Parses and checks an address: known prefix, lowercase charset, checksum, version and length.
    public init(_ text: some StringProtocol) throws(KaspaAddressError) {
        let text = String(text)
        guard let colon = text.firstIndex(of: ":") else { throw .missingPrefix }
        guard let prefix = Prefix(rawValue: String(text[..<colon])) else { throw .unknownPrefix }
        let data = text[text.index(after: colon)...]
        guard data.count > 8 else { throw .tooShort }
        var values: [UInt8] = []
        values.reserveCapacity(data.utf8.count)
        for byte in data.utf8 {
            guard let v = Bech32.value(of: byte) else { throw .invalidCharacter }
            values.append(v)
        }
        let payload5 = Array(values.dropLast(8))
        let checksum = Bech32.fiveToEight(Array(values.suffix(8))).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard Bech32.checksum(prefix: prefix.rawValue, payload5: payload5) == checksum else { throw .badChecksum }
        let raw = Bech32.fiveToEight(payload5)
        guard let first = raw.first, let version = Version(rawValue: first) else { throw .unknownVersion }
        guard raw.count - 1 == version.payloadLength else { throw .wrongLength }
        self.prefix = prefix
        self.version = version
        self.payload = Array(raw.dropFirst())
        self.string = text
    }

    /// Encodes a payload as an address.
    public init(prefix: Prefix, version: Version, payload: [UInt8]) throws(KaspaAddressError) {
        guard payload.count == version.payloadLength else { throw .wrongLength }
        let payload5 = Bech32.eightToFive([version.rawValue] + payload)
        let checksum = Bech32.checksum(prefix: prefix.rawValue, payload5: payload5)
        let checksumBytes = (0..<5).map { UInt8(truncatingIfNeeded: checksum >> (8 * (4 - $0))) }
        let chars = (payload5 + Bech32.eightToFive(checksumBytes)).map { Bech32.charset[Int($0)] }
        self.prefix = prefix
        self.version = version
        self.payload = payload
        self.string = prefix.rawValue + ":" + String(decoding: chars, as: UTF8.self)
    }
}

/// Why a string is not a Kaspa address.
public enum KaspaAddressError: Error, Hashable, Sendable, CustomStringConvertible {
    case missingPrefix, unknownPrefix, tooShort, invalidCharacter, badChecksum, unknownVersion, wrongLength

    public var description: String {
        switch self {
        case .missingPrefix: "no network prefix (kaspa: or kaspatest:)"
        case .unknownPrefix: "unknown network prefix"
        case .tooShort: "too short"
        case .invalidCharacter: "a character outside the lowercase bech32 alphabet"
        case .badChecksum: "checksum mismatch"
        case .unknownVersion: "unknown address version"
        case .wrongLength: "payload length does not match the version"
        }
    }
}

/// Kaspa's bech32 variant (CashAddr polymod, 40-bit checksum).
enum Bech32 {
    static let charset = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    private static let reverse: [Int8] = {
        var table = [Int8](repeating: -1, count: 128)
        for (i, c) in charset.enumerated() { table[Int(c)] = Int8(i) }
        return table
    }()

    static func value(of byte: UInt8) -> UInt8? {
        guard byte < 128, reverse[Int(byte)] >= 0 else { return nil }
        return UInt8(reverse[Int(byte)])
    }

    static func polymod(_ values: [UInt8]) -> UInt64 {
        var c: UInt64 = 1
        for d in values {
            let c0 = c >> 35
            c = ((c & 0x07_ffff_ffff) << 5) ^ UInt64(d)
            if c0 & 0x01 != 0 { c ^= 0x98_f2bc_8e61 }
            if c0 & 0x02 != 0 { c ^= 0x79_b76d_99e2 }
            if c0 & 0x04 != 0 { c ^= 0xf3_3e5f_b3c4 }
            if c0 & 0x08 != 0 { c ^= 0xae_2eab_e2a8 }
            if c0 & 0x10 != 0 { c ^= 0x1e_4f43_e470 }
        }
        return c ^ 1
    }

    static func checksum(prefix: String, payload5: [UInt8]) -> UInt64 {
        polymod(prefix.utf8.map { $0 & 0x1f } + [0] + payload5 + [UInt8](repeating: 0, count: 8))
    }

    static func eightToFive(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = 0
        var bits = 0
        for b in data {
            buffer = (buffer << 8) | Int(b)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(UInt8((buffer >> bits) & 31))
            }
            buffer &= (1 << bits) - 1
        }
        if bits > 0 { out.append(UInt8((buffer << (5 - bits)) & 31)) }
        return out
    }

    /// Regroups 5-bit values into bytes; right-side padding bits are dropped.
    static func fiveToEight(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = 0
        var bits = 0
        for v in data {
            buffer = (buffer << 5) | Int(v)
            bits += 5
            while bits >= 8 {
                bits -= 8
                out.append(UInt8((buffer >> bits) & 0xff))
            }
            buffer &= (1 << bits) - 1
        }
        return out
    }
}
