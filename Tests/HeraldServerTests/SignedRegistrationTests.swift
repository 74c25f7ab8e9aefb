import Crypto
import Foundation
import HeraldAPNs
import HeraldDelivery
import HeraldPushCore
import HeraldServer
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// The `signed` registration policy: the app's backend issues short JWTs, and a registration may
/// claim only the identity in `sub` (the device id, the X-Device-ID, the session id).
@Suite("Signed registration tokens", .serialized)
struct SignedRegistrationTests {
    static let secret = Array("an HS256 secret of 32 bytes or more!".utf8)
    static let backendKey = P256.Signing.PrivateKey()
    static let keys = RegistrationSigningKeys(hs256Secret: secret, es256PublicKey: backendKey.publicKey)

    /// A token as the app's backend issues it; by default it grants watching `session:s`.
    static func jwt(alg: String = "HS256", sub: String? = "d1", aud: Any = "default", exp: Double? = Date().timeIntervalSince1970 + 600,
                    keys: Any? = ["session:s"], extra: [String: Any] = [:],
                    secret: [UInt8] = SignedRegistrationTests.secret, key: P256.Signing.PrivateKey = backendKey) -> String {
        var claims: [String: Any] = ["aud": aud]
        if let sub { claims["sub"] = sub }
        if let exp { claims["exp"] = Int64(exp) }
        if let keys { claims["keys"] = keys }
        claims.merge(extra) { _, new in new }
        let header = Base64URL.encode(Array(try! JSONSerialization.data(withJSONObject: ["alg": alg, "typ": "JWT"])))
        let payload = Base64URL.encode(Array(try! JSONSerialization.data(withJSONObject: claims)))
        let input = Array("\(header).\(payload)".utf8)
        let signature: [UInt8] = switch alg {
        case "HS256": Array(HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: secret)))
        case "ES256": Array(try! key.signature(for: input).rawRepresentation)
        default: []
        }
        return "\(header).\(payload).\(Base64URL.encode(signature))"
    }

    static func headers(_ token: String?, deviceID: String? = nil) -> HTTPFields {
        var fields: HTTPFields = [.contentType: "application/json"]
        if let token { fields[.authorization] = "Bearer \(token)" }
        if let deviceID { fields[HTTPField.Name("X-Device-ID")!] = deviceID }
        return fields
    }

    static func register(_ token: String, deviceID: String?) -> String {
        #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["session:s"]\#(deviceID.map { #","device_id":"\#($0)""# } ?? "")}"#
    }

    static func signed(_ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        try await withRegistrationServer(configure: {
            $0.apps = .single(AppSettings(id: "default", publishKeys: ["publisher-key-00001"], registration: .signed(Self.keys)))
        }) { client, _ in try await body(client) }
    }

    @Test("refused tokens: 401, nothing registered", arguments: [
        ("none", nil as String?),
        ("not a JWT", "abc.def"),
        ("alg none", jwt(alg: "none")),
        ("another secret", jwt(secret: Array("another secret that is long enough!!".utf8))),
        ("another ES256 key", jwt(alg: "ES256", key: P256.Signing.PrivateKey())),
        ("expired", jwt(exp: Date().timeIntervalSince1970 - 10)),
        ("living two hours", jwt(exp: Date().timeIntervalSince1970 + 7_200)),
        ("no exp", jwt(exp: nil)),
        ("exp 1e300", jwt(exp: 1e18)),
        ("another app", jwt(aud: "other")),
        ("no sub", jwt(sub: nil)),
        ("not valid for a minute yet (nbf)", jwt(extra: ["nbf": Int64(Date().timeIntervalSince1970 + 300)])),
        ("issued in the future (iat)", jwt(extra: ["iat": Int64(Date().timeIntervalSince1970 + 300)])),
        ("nbf not a number", jwt(extra: ["nbf": "soon"])),
        ("keys not a list of strings", jwt(keys: [1, 2])),
    ])
    func refused(name: String, token: String?) async throws {
        try await Self.signed { client in
            let r = try await send(client, .post, "/v1/push/register", Self.register(String(repeating: "ab", count: 32), deviceID: "d1"),
                                   headers: Self.headers(token))
            #expect(r.status == .unauthorized, "\(name)")
        }
    }

    @Test("a token grants its own identity only: device_id, X-Device-ID, session_id, and the devices registered under it")
    func identities() async throws {
        try await Self.signed { client in
            let mine = String(repeating: "ab", count: 32), theirs = String(repeating: "cd", count: 32)
            let hs = Self.jwt(sub: "d1"), es = Self.jwt(alg: "ES256", sub: "d2"), other = Self.jwt(sub: "d9")
            // Native registration: the device_id must be the token's.
            #expect(try await send(client, .post, "/v1/push/register", Self.register(mine, deviceID: "d1"), headers: Self.headers(hs)).status == .ok)
            #expect(try await send(client, .post, "/v1/push/register", Self.register(theirs, deviceID: "d2"), headers: Self.headers(es)).status == .ok)
            var r = try await send(client, .post, "/v1/push/register", Self.register(theirs, deviceID: "d2"), headers: Self.headers(hs))
            #expect(r.status == .forbidden)
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "device_id")
            r = try await send(client, .post, "/v1/push/register", Self.register(theirs, deviceID: nil), headers: Self.headers(hs))
            #expect(r.status == .forbidden)
            // Another identity cannot read, move or remove a device that is not its own.
            r = try await send(client, .get, "/v1/push/status", headers: [HTTPField.Name("X-Device-Token")!: theirs, .authorization: "Bearer \(other)"])
            #expect(r.status == .forbidden)
            // Its own token in the query does not open another's named in the header, which wins.
            r = try await send(client, .get, "/v1/push/status?device_token=\(mine)", headers: [HTTPField.Name("X-Device-Token")!: theirs, .authorization: "Bearer \(hs)"])
            #expect(r.status == .forbidden)
            r = try await send(client, .delete, "/v1/push/unregister", #"{"device_token":"\#(theirs)"}"#, headers: Self.headers(hs))
            #expect(r.status == .forbidden)
            r = try await send(client, .delete, "/v1/push/unregister", #"{"device_token":"\#(theirs)"}"#, headers: Self.headers(es))
            #expect(r.status == .ok)
            // SafeWhisper: the X-Device-ID must be the token's.
            r = try await send(client, .post, "/api/devices/token", #"{"apnsToken":"\#(theirs)"}"#, headers: Self.headers(hs, deviceID: "d1"))
            #expect(r.status == .created)
            r = try await send(client, .post, "/api/devices/logout", nil, headers: Self.headers(es, deviceID: "d1"))
            #expect(r.status == .forbidden)
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "X-Device-ID")
            // GhostTalk: the session must be the token's.
            let session = Self.jwt(sub: "session-7")
            r = try await send(client, .post, "/apns/register", #"{"session_id":"session-7","device_token":"\#(mine)"}"#, headers: Self.headers(session))
            #expect(r.status == .ok)
            r = try await send(client, .post, "/apns/unregister", #"{"session_id":"session-8"}"#, headers: Self.headers(session))
            #expect(r.status == .forbidden)
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "session_id")
        }
    }

    @Test("a device watches only what its token grants: its own identity's keys and the keys claim (exact or prefix*); anything else is 403 naming the key")
    func watchKeysGranted() async throws {
        try await Self.signed { client in
            let token = String(repeating: "ab", count: 32)
            func register(_ watched: String, _ jwt: String) async throws -> (HTTPResponse.Status, String?) {
                let body = #"{"device_token":"\#(token)","platform":"ios","device_id":"alice","watched_addresses":[\#(watched)]}"#
                let r = try await send(client, .post, "/v1/push/register", body, headers: Self.headers(jwt))
                return (r.status, (try? json(r))?["error"].flatMap { ($0 as? [String: Any])?["field"] as? String })
            }
            let alice = Self.jwt(sub: "alice", keys: ["conv:ab12", "session:team-*"])
            // The victim's session, user or conversation: refused, naming the key.
            for victim in [#""session:bob""#, #""user:bob""#, #""conv:ffff""#] {
                let (status, field) = try await register(#""session:alice",\#(victim)"#, alice)
                #expect(status == .forbidden, "\(victim)")
                #expect(field == "watched_addresses[1]", "\(victim)")
            }
            #expect(try await Self.status(client, token, alice) == false)
            // Its own identity's keys, an exact grant and a granted prefix.
            #expect(try await register(#""session:alice","user:alice","conv:ab12","session:team-7""#, alice).0 == .ok)
            // Without a keys claim, only the identity's own keys.
            let bare = Self.jwt(sub: "alice", keys: nil)
            #expect(try await register(#""session:alice""#, bare).0 == .ok)
            #expect(try await register(#""conv:ab12""#, bare).0 == .forbidden)
            // The same rule on update.
            let r = try await send(client, .put, "/v1/push/update", #"{"device_token":"\#(token)","watched_addresses":["session:bob"]}"#, headers: Self.headers(alice))
            #expect(r.status == .forbidden)
        }
    }

    @Test("a token registered under one identity is not taken over by another's JWT; its owner keeps it")
    func noTakeover() async throws {
        try await Self.signed { client in
            let bobs = String(repeating: "cd", count: 32)
            let bob = Self.jwt(sub: "bob", keys: ["session:s"]), mallory = Self.jwt(sub: "mallory", keys: ["session:s"])
            #expect(try await send(client, .post, "/v1/push/register", Self.register(bobs, deviceID: "bob"), headers: Self.headers(bob)).status == .ok)
            let r = try await send(client, .post, "/v1/push/register", Self.register(bobs, deviceID: "mallory"), headers: Self.headers(mallory))
            #expect(r.status == .forbidden)
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "device_token")
            // Bob still owns it: his status and his update work.
            #expect(try await Self.status(client, bobs, bob) == true)
            #expect(try await send(client, .post, "/v1/push/register", Self.register(bobs, deviceID: "bob"), headers: Self.headers(bob)).status == .ok)
        }
    }

    /// A device's `push_keys` member: a P-256 public key and an auth secret, base64url.
    static func pushKeys() -> String {
        let key = P256.KeyAgreement.PrivateKey().publicKey.x963Representation
        return #""push_keys":{"p256dh":"\#(Base64URL.encode(Array(key)))","auth":"\#(Base64URL.encode([UInt8](repeating: 7, count: 16)))"}"#
    }

    @Test("one route over, the same rule: Mallory's JWT posting Bob's token to GhostTalk's or SafeWhisper's routes is 403, and Bob keeps it with its keys")
    func noTakeoverOnCompatibilityRoutes() async throws {
        try await Self.signed { client in
            let bobs = String(repeating: "cd", count: 32)
            let bob = Self.jwt(sub: "bob", keys: ["session:s"]), mallory = Self.jwt(sub: "mallory", keys: ["session:s"])
            let body = #"{"device_token":"\#(bobs)","platform":"ios","device_id":"bob","watched_addresses":["session:s"],\#(Self.pushKeys())}"#
            #expect(try await send(client, .post, "/v1/push/register", body, headers: Self.headers(bob)).status == .ok)
            // GhostTalk's route, Mallory's own session.
            var r = try await send(client, .post, "/apns/register", #"{"session_id":"mallory","device_token":"\#(bobs)"}"#, headers: Self.headers(mallory))
            #expect(r.status == .forbidden)
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "device_token")
            // SafeWhisper's route, Mallory's own device id.
            r = try await send(client, .post, "/api/devices/token", #"{"apnsToken":"\#(bobs)"}"#, headers: Self.headers(mallory, deviceID: "mallory"))
            #expect(r.status == .forbidden)
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "apnsToken")
            // Bob's device is still his, and still sealed: a registration without its keys would send it in clear.
            #expect(try await Self.status(client, bobs, bob) == true)
            r = try await send(client, .post, "/v1/push/register", Self.register(bobs, deviceID: "bob"), headers: Self.headers(bob))
            #expect(r.status == .conflict)
            #expect((try json(r)["error"] as? [String: Any])?["code"] as? String == "push_keys_required")
            #expect(try await send(client, .post, "/v1/push/register", body, headers: Self.headers(bob)).status == .ok)
            // GhostTalk's route under signed records the session's identity: Mallory cannot take that device either.
            let sessionJWT = Self.jwt(sub: "session-9"), mine = String(repeating: "ef", count: 32)
            #expect(try await send(client, .post, "/apns/register", #"{"session_id":"session-9","device_token":"\#(mine)"}"#, headers: Self.headers(sessionJWT)).status == .ok)
            r = try await send(client, .post, "/apns/register", #"{"session_id":"mallory","device_token":"\#(mine)"}"#, headers: Self.headers(mallory))
            #expect(r.status == .forbidden)
        }
    }

    @Test("the Kaspa addresses a device calls its own, and its contextual routes' peers, need the grant too")
    func ownAddressesGranted() async throws {
        try await Self.signed { client in
            let token = String(repeating: "ab", count: 32)
            let bobsAddress = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"
            let alice = Self.jwt(sub: "alice", keys: ["session:s"])
            func register(_ extra: String, _ jwt: String) async throws -> (HTTPResponse.Status, String?) {
                let body = #"{"device_token":"\#(token)","platform":"ios","device_id":"alice","watched_addresses":["session:alice"],\#(extra)}"#
                let r = try await send(client, .post, "/v1/push/register", body, headers: Self.headers(jwt))
                return (r.status, (try? json(r))?["error"].flatMap { ($0 as? [String: Any])?["field"] as? String })
            }
            var (status, field) = try await register(#""addresses":["\#(bobsAddress)"]"#, alice)
            #expect(status == .forbidden && field == "addresses[0]", "\(status) \(String(describing: field))")
            (status, field) = try await register(#""contextual_routes":[{"peer_address":"\#(bobsAddress)","aliases":["a1b2c3d4e5f6"]}]"#, alice)
            #expect(status == .forbidden && field == "contextual_routes[0].peer_address", "\(status) \(String(describing: field))")
            // Granted by name, it is the device's own.
            let granted = Self.jwt(sub: "alice", keys: [bobsAddress])
            #expect(try await register(#""addresses":["\#(bobsAddress)"]"#, granted).0 == .ok)
        }
    }

    @Test("identities and keys compare as exact bytes: a JWT for e + U+0301 does not grant session:é")
    func identitiesAreBytes() async throws {
        try await Self.signed { client in
            let token = String(repeating: "ab", count: 32)
            let decomposed = Self.jwt(sub: "e\u{301}", keys: nil)
            let body = #"{"device_token":"\#(token)","platform":"ios","device_id":"e\#u{301}","watched_addresses":["session:\#u{E9}"]}"#
            let r = try await send(client, .post, "/v1/push/register", body, headers: Self.headers(decomposed))
            #expect(r.status == .forbidden)
            let own = #"{"device_token":"\#(token)","platform":"ios","device_id":"e\#u{301}","watched_addresses":["session:e\#u{301}"]}"#
            #expect(try await send(client, .post, "/v1/push/register", own, headers: Self.headers(decomposed)).status == .ok)
        }
    }

    /// Whether `token` is registered, read with `jwt`'s identity.
    static func status(_ client: any TestClientProtocol, _ token: String, _ jwt: String) async throws -> Bool? {
        let r = try await send(client, .get, "/v1/push/status", headers: [HTTPField.Name("X-Device-Token")!: token, .authorization: "Bearer \(jwt)"])
        return try json(r)["registered"] as? Bool
    }
}
