import Foundation

/// Base64url without padding (RFC 7515).
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        var s = Data(bytes).base64EncodedString()
        s = s.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while s.last == "=" { s.removeLast() }
        return s
    }

    /// A byte of base64url's alphabet: A–Z, a–z, 0–9, `-` and `_`.
    public static func isAlphabet(_ byte: UInt8) -> Bool {
        (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }

    public static func decode(_ text: Substring) -> [UInt8]? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map { Array($0) }
    }
}
