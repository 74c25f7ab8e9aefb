import Crypto
import Foundation
import HeraldAPNsCore
import HeraldPushCore

/// The keys an app's backend signs registration tokens with: an HS256 secret, an ES256 public
/// key, or both. A token names one identity (`sub`) that a registration may claim.
public struct RegistrationSigningKeys: Sendable, Hashable {
    public var hs256Secret: [UInt8]?
    public var es256PublicKey: P256.Signing.PublicKey?

    /// The shortest HS256 secret accepted: 32 bytes, the hash's size.
    public static let minimumSecretLength = 32
    /// The longest a token may live: an hour.
    public static let maximumLifetime: TimeInterval = 3_600

    public init(hs256Secret: [UInt8]? = nil, es256PublicKey: P256.Signing.PublicKey? = nil) {
        self.hs256Secret = hs256Secret
        self.es256PublicKey = es256PublicKey
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.hs256Secret == b.hs256Secret && a.es256PublicKey?.rawRepresentation == b.es256PublicKey?.rawRepresentation
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(hs256Secret)
        hasher.combine(es256PublicKey?.rawRepresentation)
    }

    /// Why a token is refused.
    public struct Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// What a verified token grants.
    public struct Claims: Sendable, Hashable {
        /// The identity (`sub`).
        public var subject: String
        /// The `keys` claim: watch keys the device may watch besides its own identity's, each
        /// exact or a prefix ending in `*` (`conv:*`).
        public var keys: [String]
    }

    /// The most entries of a `keys` claim, and the longest.
    public static let maximumGrantedKeys = 1_000
    static let maximumGrantedKeyLength = 300
    /// Clocks differ: `nbf` and `iat` may be this far ahead of Herald's.
    static let leeway: TimeInterval = 60

    /// Checks a compact JWT for `app` at `now` and returns what it grants.
    ///
    /// Refused: anything but three base64url parts; an `alg` without a configured key (`none`
    /// among them); a bad signature; `aud` not naming the app; no `exp`, one in the past, or one
    /// more than an hour ahead; `nbf` or `iat` ahead of now (past a minute's leeway); no `sub`;
    /// a `keys` claim that is not a list of watch keys. Every number is range-checked before use.
    public func verify(_ token: String, app: String, now: Date) throws(Refusal) -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw Refusal(description: "not a compact JWT") }
        guard let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
            let alg = header["alg"] as? String
        else { throw Refusal(description: "the JWT header names no alg") }
        let signed = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        switch alg {
        case "HS256":
            guard let secret = hs256Secret else { throw Refusal(description: "HS256 is not configured for this app") }
            guard HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: signed, using: SymmetricKey(data: secret)) else {
                throw Refusal(description: "bad signature")
            }
        case "ES256":
            guard let key = es256PublicKey else { throw Refusal(description: "ES256 is not configured for this app") }
            guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature), key.isValidSignature(ecdsa, for: signed) else {
                throw Refusal(description: "bad signature")
            }
        default:
            throw Refusal(description: "alg \(alg) is not accepted")
        }
        guard let claims = try? JSONSerialization.jsonObject(with: Data(claimBytes)) as? [String: Any] else {
            throw Refusal(description: "the claims are not a JSON object")
        }
        let audience: [String] = (claims["aud"] as? String).map { [$0] } ?? (claims["aud"] as? [String]) ?? []
        guard audience.contains(app) else { throw Refusal(description: "aud does not name app \(app)") }
        guard let exp = (claims["exp"] as? NSNumber)?.doubleValue, exp.isFinite else { throw Refusal(description: "exp is required") }
        let seconds = now.timeIntervalSince1970
        guard exp > seconds else { throw Refusal(description: "the token has expired") }
        guard exp <= seconds + Self.maximumLifetime + 60 else { throw Refusal(description: "a token lives an hour at most") }
        for name in ["nbf", "iat"] {
            guard let value = claims[name] else { continue }
            guard let number = (value as? NSNumber)?.doubleValue, number.isFinite else { throw Refusal(description: "\(name) is a number of seconds") }
            guard number <= seconds + Self.leeway else {
                throw Refusal(description: name == "nbf" ? "the token is not valid yet (nbf)" : "the token was issued in the future (iat)")
            }
        }
        guard let sub = claims["sub"] as? String, !sub.isEmpty, sub.utf8.count <= 256 else {
            throw Refusal(description: "sub (the identity granted) is required")
        }
        var keys: [String] = []
        if let granted = claims["keys"] {
            guard let list = granted as? [String], list.count <= Self.maximumGrantedKeys,
                list.allSatisfy({ !$0.isEmpty && $0.utf8.count <= Self.maximumGrantedKeyLength })
            else { throw Refusal(description: "keys is a list of at most \(Self.maximumGrantedKeys) watch keys (or prefixes ending in *)") }
            keys = list
        }
        return Claims(subject: sub, keys: keys)
    }
}
