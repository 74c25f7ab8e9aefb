public import Crypto
public import Foundation
import HeraldPushCore
import Synchronization

/// An application server's VAPID key (RFC 8292): one long-lived P-256 key per app. Browsers and
/// UnifiedPush distributors bind each subscription to its public half for life, so rotating it
/// ends every subscription.
public struct VAPIDKey: Sendable {
    let privateKey: P256.Signing.PrivateKey

    public init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
    }

    /// Loads a PEM private key (`herald vapid-keys` writes one; `openssl ecparam -name prime256v1` does too).
    public init(pem: String) throws {
        privateKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
    }

    /// The public key as a web app passes it to `pushManager.subscribe` (`applicationServerKey`):
    /// the 65-byte uncompressed point in base64url, 87 characters.
    public var applicationServerKey: String { Base64URL.encode(Array(privateKey.publicKey.x963Representation)) }

    /// The private key in PEM, for writing it out once.
    public var pem: String { privateKey.pemRepresentation }
}

/// The VAPID `sub` claim: a `mailto:` address or an `https:` URL where the push service can reach
/// the operator. Apple refuses a token without one, or with one it cannot read (`mailto: <x>`).
public struct VAPIDSubject: Sendable, Hashable, CustomStringConvertible {
    public let description: String

    /// - Throws: `VAPIDError.subject` unless `text` is `mailto:local@domain` (no spaces, no angle
    ///   brackets) or an `https://` URL with a host.
    public init(_ text: String) throws(VAPIDError) {
        let forbidden = Set(" <>\"\\".utf8)
        guard text.utf8.count <= 512, !text.utf8.contains(where: { forbidden.contains($0) || $0 < 0x20 || $0 >= 0x7f }) else {
            throw .subject
        }
        if text.hasPrefix("mailto:") {
            let address = text.dropFirst("mailto:".count).split(separator: "@", omittingEmptySubsequences: false)
            guard address.count == 2, !address[0].isEmpty, address[1].contains("."), !address[1].hasPrefix("."), !address[1].hasSuffix(".")
            else { throw .subject }
        } else {
            guard text.hasPrefix("https://"), let url = URL(string: text), url.scheme == "https", let host = url.host, !host.isEmpty else {
                throw .subject
            }
        }
        description = text
    }
}

/// Why a VAPID setting or token is refused.
public enum VAPIDError: Error, Sendable, Hashable, CustomStringConvertible {
    case subject
    case missing
    case malformed
    case signature
    case audience
    case expiration

    public var description: String {
        switch self {
        case .subject: "the VAPID subject is a mailto: address or an https: URL"
        case .missing: "no Authorization: vapid t=…, k=… header"
        case .malformed: "the VAPID header or token is malformed"
        case .signature: "the token's ES256 signature does not verify with k"
        case .audience: "the token's aud is not this push service's origin"
        case .expiration: "the token's exp is past, or more than 24 hours ahead"
        }
    }
}

/// VAPID tokens: signing (`Authorization: vapid t=<JWT>, k=<key>`) and checking what a push
/// service checks.
public enum VAPID {
    /// How far ahead a token's `exp` may be (RFC 8292 §2: at most 24 hours).
    public static let maximumLifetime: TimeInterval = 86_400

    /// The `aud` for a push endpoint: its origin, `https://host[:port]` (the port only when not 443).
    public static func audience(of endpoint: URL) -> String? {
        (try? WebPushEndpoint(endpoint.absoluteString, allowHTTP: true))?.origin
    }

    /// The `Authorization` header value for a token to `audience` expiring at `expiresAt`.
    public static func authorization(key: VAPIDKey, subject: VAPIDSubject, audience: String, expiresAt: Date) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let claims = Claims(aud: audience, exp: Int64(expiresAt.timeIntervalSince1970), sub: subject.description)
        // Encoding three plain fields cannot fail.
        let json = String(decoding: try! encoder.encode(claims), as: UTF8.self)
        let jwt = ES256JWT.sign(header: #"{"typ":"JWT","alg":"ES256"}"#, claims: json, with: key.privateKey)
        return "vapid t=\(jwt), k=\(key.applicationServerKey)"
    }

    /// Checks an `Authorization` header as a push service does: the `vapid` scheme, a signature
    /// by `k`, `aud` equal to `audience`, `exp` ahead of `now` by at most 24 hours, a `sub`.
    /// - Returns: `k`, the application server key the subscription must be bound to.
    public static func verify(authorization header: String?, audience: String, now: Date) throws(VAPIDError) -> String {
        guard let header, header.lowercased().hasPrefix("vapid ") else { throw .missing }
        var token: Substring?, key: Substring?
        for part in header.dropFirst("vapid ".count).split(separator: ",") {
            let item = part.trimmingCharacters(in: .whitespaces)
            if item.hasPrefix("t=") { token = Substring(item.dropFirst(2)) }
            if item.hasPrefix("k=") { key = Substring(item.dropFirst(2)) }
        }
        guard let token, let key, let point = Base64URL.decode(key), point.count == 65,
            let publicKey = try? P256.Signing.PublicKey(x963Representation: point)
        else { throw .malformed }
        guard let (headerJSON, claimsJSON) = ES256JWT.verify(token, with: publicKey) else { throw .signature }
        guard let jose = try? JSONDecoder().decode([String: String].self, from: Data(headerJSON)), jose["alg"] == "ES256",
            let claims = try? JSONDecoder().decode(OptionalClaims.self, from: Data(claimsJSON))
        else { throw .malformed }
        guard let aud = claims.aud, aud == audience else { throw .audience }
        guard let exp = claims.exp else { throw .expiration }
        let seconds = TimeInterval(exp) - now.timeIntervalSince1970
        guard seconds > 0, seconds <= maximumLifetime else { throw .expiration }
        guard let sub = claims.sub, (try? VAPIDSubject(sub)) != nil else { throw .subject }
        return String(key)
    }

    struct Claims: Encodable {
        var aud: String
        var exp: Int64
        var sub: String
    }

    struct OptionalClaims: Decodable {
        var aud: String?
        var exp: Int64?
        var sub: String?
    }
}

/// Signs one app's VAPID tokens, one per push-service origin, reused until an hour before they
/// expire (tokens live 12 hours: Apple and Mozilla refuse an `exp` more than a day ahead).
public final class VAPIDSigner: Sendable {
    public let key: VAPIDKey
    public let subject: VAPIDSubject
    /// How long a new token lives.
    public let lifetime: TimeInterval = 12 * 3_600
    private let cache = Mutex<[String: (header: String, expiresAt: Date)]>([:])

    public init(key: VAPIDKey, subject: VAPIDSubject) {
        self.key = key
        self.subject = subject
    }

    /// The `Authorization` header for a push to `endpoint`, or nil when it has no origin.
    public func authorization(for endpoint: URL, now: Date) -> String? {
        VAPID.audience(of: endpoint).map { authorization(audience: $0, now: now) }
    }

    /// The `Authorization` header for a push to an endpoint under `audience` (its origin).
    public func authorization(audience: String, now: Date) -> String {
        cache.withLock { cache in
            if let cached = cache[audience], cached.expiresAt.timeIntervalSince(now) > 3_600 { return cached.header }
            let expiresAt = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + lifetime).rounded(.down))
            let header = VAPID.authorization(key: key, subject: subject, audience: audience, expiresAt: expiresAt)
            cache[audience] = (header, expiresAt)
            return header
        }
    }
}
