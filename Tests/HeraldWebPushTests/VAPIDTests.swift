import Crypto
import Foundation
import HeraldWebPushCore
import Testing

/// VAPID (RFC 8292): the header Herald sends, checked by Herald's own verifier (the simulator's)
/// and by PyJWT, and the refusals a push service makes.
@Suite("VAPID (RFC 8292)")
struct VAPIDTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("the audience of an endpoint is its origin", arguments: [
        ("https://fcm.googleapis.com/fcm/send/abc:def", "https://fcm.googleapis.com"),
        ("https://updates.push.services.mozilla.com:443/wpush/v2/x", "https://updates.push.services.mozilla.com"),
        ("https://127.0.0.1:8443/push/1", "https://127.0.0.1:8443"),
        ("https://Web.Push.Apple.com/QX", "https://web.push.apple.com"),
    ])
    func audience(endpoint: String, origin: String) {
        #expect(VAPID.audience(of: URL(string: endpoint)!) == origin)
    }

    @Test("subjects: mailto: addresses and https: URLs only", arguments: [
        ("mailto:ops@example.org", true), ("https://example.org/contact", true), ("mailto: <ops@example.org>", false),
        ("mailto:admin@localhost", false), ("ops@example.org", false), ("http://example.org", false), ("mailto:", false), ("", false),
    ])
    func subjects(text: String, valid: Bool) {
        #expect(((try? VAPIDSubject(text)) != nil) == valid)
    }

    @Test("a signed header verifies: k is the application server key, aud, exp ≤ 24 h, sub; PyJWT agrees")
    func signAndVerify() async throws {
        let key = VAPIDKey(privateKey: P256.Signing.PrivateKey())
        #expect(key.applicationServerKey.count == 87)
        let signer = VAPIDSigner(key: key, subject: try VAPIDSubject("mailto:ops@example.org"))
        let endpoint = URL(string: "https://push.example.net/wpush/abc")!
        let header = try #require(signer.authorization(for: endpoint, now: Self.now))
        #expect(header.hasPrefix("vapid t=") && header.hasSuffix(", k=" + key.applicationServerKey))
        #expect(try VAPID.verify(authorization: header, audience: "https://push.example.net", now: Self.now) == key.applicationServerKey)
        // Cached per origin until an hour before it expires; another origin gets its own.
        #expect(signer.authorization(for: URL(string: "https://push.example.net/other")!, now: Self.now.addingTimeInterval(10 * 3_600)) == header)
        #expect(signer.authorization(for: endpoint, now: Self.now.addingTimeInterval(11.5 * 3_600)) != header)
        #expect(signer.authorization(for: URL(string: "https://fcm.googleapis.com/fcm/send/x")!, now: Self.now) != header)

        // PyJWT checks the real token against the real clock: sign one that expires 12 h from now.
        let live = VAPID.authorization(
            key: key, subject: try VAPIDSubject("mailto:ops@example.org"), audience: "https://push.example.net",
            expiresAt: Date().addingTimeInterval(12 * 3_600))
        let claims = try await Self.pyjwt(live, audience: "https://push.example.net")
        #expect(claims?.contains(#""aud": "https://push.example.net""#) == true && claims?.contains(#""sub": "mailto:ops@example.org""#) == true)
    }

    @Test("what a push service refuses: another audience, an expired or too-distant exp, another key's signature, no header")
    func refusals() throws {
        let key = VAPIDKey(privateKey: P256.Signing.PrivateKey())
        let subject = try VAPIDSubject("https://example.org/contact")
        let audience = "https://push.example.net"
        func header(expiresIn seconds: TimeInterval) -> String {
            VAPID.authorization(key: key, subject: subject, audience: audience, expiresAt: Self.now.addingTimeInterval(seconds))
        }
        #expect(throws: VAPIDError.audience) { try VAPID.verify(authorization: header(expiresIn: 3_600), audience: "https://evil.example", now: Self.now) }
        #expect(throws: VAPIDError.expiration) { try VAPID.verify(authorization: header(expiresIn: -1), audience: audience, now: Self.now) }
        #expect(throws: VAPIDError.expiration) { try VAPID.verify(authorization: header(expiresIn: 86_401), audience: audience, now: Self.now) }
        #expect(throws: VAPIDError.missing) { try VAPID.verify(authorization: nil, audience: audience, now: Self.now) }
        #expect(throws: VAPIDError.missing) { try VAPID.verify(authorization: "WebPush abc", audience: audience, now: Self.now) }
        // A token signed by one key presented with another key's k.
        let other = VAPIDKey(privateKey: P256.Signing.PrivateKey())
        let forged = header(expiresIn: 3_600).replacingOccurrences(of: key.applicationServerKey, with: other.applicationServerKey)
        #expect(throws: VAPIDError.signature) { try VAPID.verify(authorization: forged, audience: audience, now: Self.now) }
    }

    @Test("the key survives PEM: the same application server key after writing and reading it")
    func pemRoundTrip() throws {
        let key = VAPIDKey(privateKey: P256.Signing.PrivateKey())
        #expect(try VAPIDKey(pem: key.pem).applicationServerKey == key.applicationServerKey)
    }

    static func pyjwt(_ header: String, audience: String) async throws -> String? {
        try await runFixture("vapid_check.py", [header, audience], needs: "pyjwt cryptography")
    }
}
