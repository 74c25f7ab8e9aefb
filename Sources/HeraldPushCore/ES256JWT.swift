public import Crypto
import Foundation

/// Compact ES256 JSON Web Tokens (RFC 7515/7518): what APNs provider tokens and Web Push's VAPID
/// tokens both are. The signature is JWS's raw r‖s (64 bytes), not DER.
public enum ES256JWT {
    /// `base64url(header).base64url(claims).base64url(r‖s)`; `header` and `claims` are JSON text.
    public static func sign(header: String, claims: String, with key: P256.Signing.PrivateKey) -> String {
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        // P-256 signing cannot fail for a valid key and in-memory input.
        let signature = try! key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// The header's and the claims' JSON bytes when `jwt` is three base64url parts whose
    /// signature `key` made; nil otherwise.
    public static func verify(_ jwt: Substring, with key: P256.Signing.PublicKey) -> (header: [UInt8], claims: [UInt8])? {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(parts[0]), let claims = Base64URL.decode(parts[1]),
            let raw = Base64URL.decode(parts[2]), raw.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: raw),
            key.isValidSignature(signature, for: Array(jwt[jwt.startIndex..<parts[1].endIndex].utf8))
        else { return nil }
        return (header, claims)
    }
}
