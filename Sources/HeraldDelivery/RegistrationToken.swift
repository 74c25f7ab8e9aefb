public import Crypto
public import Foundation
import HeraldPushCore
import JWTKit

/// The keys an app's backend signs registration tokens with: an HS256 secret, an ES256 public
/// key, or both. A token names one identity (`sub`) that a registration may claim. Signatures
/// and the token's form are checked by jwt-kit; the policy's rules (audience, lifetime, clock
/// leeway, identity, granted keys) here, against Herald's clock.
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

    /// The claims as jwt-kit decodes them: a claim of the wrong type fails the decoding.
    struct TokenClaims: JWTPayload {
        var aud: AudienceClaim?
        var exp: Double?
        var nbf: Double?
        var iat: Double?
        var sub: String?
        var keys: [String]?

        /// The policy's rules need Herald's clock: `verify(_:app:now:)` applies them.
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// The header's `alg`, which chooses the key.
    struct TokenHeader: Decodable {
        var alg: String?
    }

    /// Checks a compact JWT for `app` at `now` and returns what it grants.
    ///
    /// Refused: anything but three base64url parts; an `alg` without a configured key (`none`
    /// among them); a bad signature; `aud` not naming the app; no `exp`, one in the past, or one
    /// more than an hour ahead; `nbf` or `iat` ahead of now (past a minute's leeway); no `sub`;
    /// a `keys` claim that is not a list of watch keys. Every number is range-checked before use.
    public func verify(_ token: String, app: String, now: Date) async throws(Refusal) -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]) else { throw Refusal(description: "not a compact JWT") }
        guard let alg = (try? JSONDecoder().decode(TokenHeader.self, from: Data(headerBytes)))?.alg else {
            throw Refusal(description: "the JWT header names no alg")
        }
        // One key per collection, chosen by the token's `alg`: an HS256 token is never checked
        // against the ES256 key or the reverse.
        let keys = JWTKeyCollection()
        switch alg {
        case "HS256":
            guard let hs256Secret else { throw Refusal(description: "HS256 is not configured for this app") }
            await keys.add(hmac: HMACKey(from: hs256Secret), digestAlgorithm: .sha256)
        case "ES256":
            guard let es256PublicKey, let key = try? ES256PublicKey(backing: es256PublicKey) else {
                throw Refusal(description: "ES256 is not configured for this app")
            }
            await keys.add(ecdsa: key)
        default:
            throw Refusal(description: "alg \(alg) is not accepted")
        }
        let claims: TokenClaims
        do {
            claims = try await keys.verify(token, as: TokenClaims.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw Refusal(description: "bad signature")
        } catch {
            throw Refusal(description: "the token is not readable: \(error)")
        }
        return try Self.apply(claims, app: app, now: now)
    }

    /// The policy's rules on a token whose signature holds.
    static func apply(_ claims: TokenClaims, app: String, now: Date) throws(Refusal) -> Claims {
        guard claims.aud?.value.contains(app) == true else { throw Refusal(description: "aud does not name app \(app)") }
        guard let exp = claims.exp, exp.isFinite else { throw Refusal(description: "exp is required") }
        let seconds = now.timeIntervalSince1970
        guard exp > seconds else { throw Refusal(description: "the token has expired") }
        guard exp <= seconds + maximumLifetime + 60 else { throw Refusal(description: "a token lives an hour at most") }
        for (name, value) in [("nbf", claims.nbf), ("iat", claims.iat)] {
            guard let value else { continue }
            guard value.isFinite else { throw Refusal(description: "\(name) is a number of seconds") }
            guard value <= seconds + leeway else {
                throw Refusal(description: name == "nbf" ? "the token is not valid yet (nbf)" : "the token was issued in the future (iat)")
            }
        }
        guard let sub = claims.sub, !sub.isEmpty, sub.utf8.count <= 256 else {
            throw Refusal(description: "sub (the identity granted) is required")
        }
        let keys = claims.keys ?? []
        guard keys.count <= maximumGrantedKeys, keys.allSatisfy({ !$0.isEmpty && $0.utf8.count <= maximumGrantedKeyLength }) else {
            throw Refusal(description: "keys is a list of at most \(maximumGrantedKeys) watch keys (or prefixes ending in *)")
        }
        return Claims(subject: sub, keys: keys)
    }
}
