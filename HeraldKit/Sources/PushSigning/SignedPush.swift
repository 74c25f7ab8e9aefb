public import Crypto
import Foundation
#if canImport(FoundationEssentials)
import FoundationEssentials  // Linux: its Data members need the import; Apple's Foundation has them
#endif

/// A push document signed by its app's Ed25519 key at an issue time (docs/signed-pushes.md).
///
/// The signature covers `herald-push-v1`, a line feed, the issue time in decimal Unix seconds, a
/// line feed, and the document's exact bytes. A signed push travels in one of two forms:
/// - the **envelope**, inside a sealed body: `{"herald":1,"iat":N,"sig":"S","doc":D}`, members in
///   this order, no spaces, `S` the signature in base64url without padding, `D` the document's
///   bytes as they are;
/// - **attached**, beside an unsealed document (a JSON object): the document with one last member,
///   `"herald_signature":"N.S"`, so that whoever holds the bytes received cuts it off again.
public struct SignedPush: Sendable, Hashable {
    /// The document's exact bytes (the push as an unsealed push carries it).
    public var document: [UInt8]
    /// When Herald signed it, in Unix seconds.
    public var issuedAt: Int64
    /// The 64-byte Ed25519 signature over `signingInput(document:issuedAt:)`.
    public var signature: [UInt8]

    public init(document: [UInt8], issuedAt: Int64, signature: [UInt8]) {
        self.document = document
        self.issuedAt = issuedAt
        self.signature = signature
    }

    /// Signs `document` at `issuedAt` with `key`.
    public init(signing document: [UInt8], issuedAt: Int64, with key: Curve25519.Signing.PrivateKey) {
        self.document = document
        self.issuedAt = issuedAt
        // Ed25519 signing fails only for a malformed key, which a `PrivateKey` is not.
        // Copied out of `Data` in one call: `Array(Data)` walks its iterator byte by byte.
        signature = (try? key.signature(for: Self.signingInput(document: document, issuedAt: issuedAt)).withUnsafeBytes { Array($0) }) ?? []
    }

    /// The bytes the signature covers.
    public static func signingInput(document: [UInt8], issuedAt: Int64) -> [UInt8] {
        var input = [UInt8]()
        input.reserveCapacity(signingInputHead.count + 21 + document.count)
        input += signingInputHead
        appendDecimal(issuedAt, to: &input)
        input.append(0x0A)
        input += document
        return input
    }

    private static let signingInputHead = Array("herald-push-v1\n".utf8)

    /// `value` in decimal ASCII, written as bytes (string interpolation allocates, once per push).
    static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        let magnitude = value.magnitude
        var divisor: UInt64 = 1
        while divisor <= magnitude / 10 { divisor *= 10 }
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(magnitude / divisor % 10))
            divisor /= 10
        } while divisor > 0
    }

    /// Checks the signature against `publicKey`, and the issue time against `now`: no older than
    /// `window` seconds and no more than `allowedSkew` seconds ahead.
    public func verify(publicKey: Curve25519.Signing.PublicKey, now: Int64, window: Int64, allowedSkew: Int64 = 300) throws(SignedPushError) {
        guard signature.count == 64,
            publicKey.isValidSignature(signature, for: Self.signingInput(document: document, issuedAt: issuedAt))
        else { throw .badSignature }
        if issuedAt > now.addingReportingOverflow(allowedSkew).partialValue { throw .fromTheFuture }
        if now.subtractingReportingOverflow(issuedAt).partialValue > window { throw .stale }
    }

    // MARK: The envelope (inside a sealed body)

    private static let envelopeHead = Array(#"{"herald":1,"iat":"#.utf8)

    /// `{"herald":1,"iat":N,"sig":"S","doc":D}`.
    public var envelope: [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(Self.envelopeHead.count + 120 + document.count)
        out += Self.envelopeHead
        Self.appendDecimal(issuedAt, to: &out)
        out += Self.envelopeSignature
        out += Base64URLText.encodedBytes(signature)
        out += Self.envelopeDocument
        out += document
        out.append(UInt8(ascii: "}"))
        return out
    }

    private static let envelopeSignature = Array(#","sig":""#.utf8)
    private static let envelopeDocument = Array(#"","doc":"#.utf8)

    /// Reads an envelope, exactly in the form `envelope` writes.
    /// - Throws: `SignedPushError.malformed` for anything else.
    public init(envelope bytes: [UInt8]) throws(SignedPushError) {
        var reader = ByteReader(bytes)
        guard reader.take(Self.envelopeHead), let issuedAt = reader.integer(), reader.take(Self.envelopeSignature),
            let signature = reader.base64URL(until: UInt8(ascii: "\"")), reader.take(Array(#","doc":"#.utf8)),
            bytes.last == UInt8(ascii: "}"), reader.position < bytes.count - 1
        else { throw .malformed }
        self.init(document: Array(bytes[reader.position..<(bytes.count - 1)]), issuedAt: issuedAt, signature: signature)
    }

    // MARK: Attached (beside an unsealed document)

    /// The member name an attached signature goes under.
    public static let attachedMember = "herald_signature"

    /// The document with `"herald_signature":"N.S"` as its last member; nil when the document is
    /// not a JSON object (`{` … `}`).
    public var attached: [UInt8]? {
        guard document.first == UInt8(ascii: "{"), document.last == UInt8(ascii: "}") else { return nil }
        let isEmpty = document.dropFirst().dropLast().allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        var out = [UInt8]()
        out.reserveCapacity(document.count + Self.attachedHead.count + 110)
        out += document[..<(document.count - 1)]  // a slice (`dropLast()` here is Sequence's, element by element)
        if !isEmpty { out.append(UInt8(ascii: ",")) }
        out += Self.attachedHead
        Self.appendDecimal(issuedAt, to: &out)
        out.append(UInt8(ascii: "."))
        out += Base64URLText.encodedBytes(signature)
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: "}"))
        return out
    }

    private static let attachedHead = Array("\"\(attachedMember)\":\"".utf8)

    /// Reads a payload received with an attached signature: the signature and the document as it
    /// was before the member was added.
    /// - Throws: `SignedPushError.unsigned` when the payload does not end with the member.
    public init(attached bytes: [UInt8]) throws(SignedPushError) {
        let name = Self.attachedHead
        guard bytes.count > name.count + 4, bytes.suffix(2) == [UInt8(ascii: "\""), UInt8(ascii: "}")],
            let start = Self.lastRange(of: name, in: bytes)
        else { throw .unsigned }
        var reader = ByteReader(bytes)
        reader.position = start + name.count
        guard let issuedAt = reader.integer(), reader.take([UInt8(ascii: ".")]),
            let signature = reader.base64URL(until: UInt8(ascii: "\"")), reader.position == bytes.count - 1
        else { throw .malformed }
        // The document: everything before the member (and its comma), closed again.
        var end = start
        if end > 0, bytes[end - 1] == UInt8(ascii: ",") { end -= 1 }
        self.init(document: Array(bytes[..<end]) + [UInt8(ascii: "}")], issuedAt: issuedAt, signature: signature)
    }

    private static func lastRange(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = haystack.count - needle.count
        while i >= 0 {
            if haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i -= 1
        }
        return nil
    }
}

/// Why a signed push was refused.
public enum SignedPushError: Error, Hashable, Sendable {
    /// It carries no signature.
    case unsigned
    /// Not in the form `SignedPush` writes.
    case malformed
    /// The signature does not verify with the key: changed on the way, or signed by another key.
    case badSignature
    /// Issued longer ago than the window allows (a replay, or a push held too long).
    case stale
    /// Issued further ahead than the clocks' allowed skew.
    case fromTheFuture
}

/// Base64url without padding (RFC 4648 §5), as the registration's keys and the signatures use it.
public enum Base64URLText {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        String(decoding: encodedBytes(bytes), as: UTF8.self)
    }

    /// The encoding as UTF-8 bytes, written in place (a sealed push's body is about a kilobyte).
    public static func encodedBytes(_ bytes: [UInt8]) -> [UInt8] {
        let length = bytes.count / 3 * 4 + [0, 2, 3][bytes.count % 3]
        return [UInt8](unsafeUninitializedCapacity: length) { out, initialized in
            alphabet.withUnsafeBufferPointer { table in
                var i = 0
                var o = 0
                while i + 2 < bytes.count {
                    let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                    out[o] = table[Int(n >> 18 & 63)]
                    out[o + 1] = table[Int(n >> 12 & 63)]
                    out[o + 2] = table[Int(n >> 6 & 63)]
                    out[o + 3] = table[Int(n & 63)]
                    i += 3
                    o += 4
                }
                if bytes.count - i == 1 {
                    let n = UInt32(bytes[i]) << 16
                    out[o] = table[Int(n >> 18 & 63)]
                    out[o + 1] = table[Int(n >> 12 & 63)]
                } else if bytes.count - i == 2 {
                    let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
                    out[o] = table[Int(n >> 18 & 63)]
                    out[o + 1] = table[Int(n >> 12 & 63)]
                    out[o + 2] = table[Int(n >> 6 & 63)]
                }
            }
            initialized = length
        }
    }

    /// The bytes of `text`, or nil when it is not base64url without padding.
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for c in text {
            let value: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(c - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(c - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            buffer = buffer << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        // Leftover bits must be zero (one encoding per byte string).
        guard buffer & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }

    public static func decode(_ text: String) -> [UInt8]? { decode(Array(text.utf8)) }
}

/// Reads the fixed forms above byte by byte.
private struct ByteReader {
    let bytes: [UInt8]
    var position = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func take(_ expected: [UInt8]) -> Bool {
        guard bytes.count - position >= expected.count, bytes[position..<(position + expected.count)].elementsEqual(expected) else { return false }
        position += expected.count
        return true
    }

    /// A non-negative decimal of at most 18 digits, no leading zero.
    mutating func integer() -> Int64? {
        let start = position
        var value: Int64 = 0
        while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9"), position - start < 18 {
            value = value * 10 + Int64(bytes[position] - UInt8(ascii: "0"))
            position += 1
        }
        guard position > start, !(bytes[start] == UInt8(ascii: "0") && position - start > 1) else { return nil }
        return value
    }

    mutating func base64URL(until terminator: UInt8) -> [UInt8]? {
        guard let end = bytes[position...].firstIndex(of: terminator) else { return nil }
        let decoded = Base64URLText.decode(bytes[position..<end])
        position = end + 1
        return decoded
    }
}
