import Crypto
import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldDelivery
import HeraldKit
import HeraldPushCore
import HeraldStore
import HeraldTestSupport
import PushSigning
import Testing

/// Signed and sealed pushes (docs/signed-pushes.md): what Herald's `PushSealing` makes of a push, and what
/// HeraldKit's `PushAuthenticator` and the independent Python verifier (Fixtures/verify_push.py,
/// `cryptography` and `http_ece`) accept and refuse.
@Suite("Signed and sealed pushes")
struct SignedPushTests {
    static let document = Array(#"{"aps":{"alert":{"title":"Kasia","body":"Grüße, 4 KAS"}},"kasia":{"txId":"ab","payload":null}}"#.utf8)
    static let now: Int64 = 1_764_000_000
    let signingKey = PushSigningKey()
    var pinned: String { signingKey.publicKeyBase64URL }

    func authenticator(_ keys: SealedPushKeys?, at time: Int64 = now) throws -> PushAuthenticator {
        try PushAuthenticator(pinnedKey: pinned, keys: keys, clock: ManualClock(Date(timeIntervalSince1970: TimeInterval(time))))
    }

    /// What Herald's sealing makes of `push` for a device with `keys` (nil: unsealed).
    func prepared(_ push: RenderedPush, keys: SealedPushKeys?, mode: SealingMode = .whenRegistered, at time: Int64 = now, limit: Int = 4_096) throws -> RenderedPush {
        var attributes = DeviceAttributes(production: true)
        if let keys { attributes = try DevicePushKeys(p256dh: keys.p256dh, auth: keys.authSecret).stored(in: attributes) }
        var signatures = SignedDocuments()
        return PushSealing(signingKey: signingKey, mode: mode).prepare(push, for: attributes, issuedAt: time, limit: limit, signatures: &signatures)
    }

    static func alert(_ payload: [UInt8] = document) -> RenderedPush {
        RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: payload)
    }

    static func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    @Test("the envelope and the attached signature carry the document's exact bytes, and verify with the app's key")
    func forms() throws {
        let signed = SignedPush(signing: Self.document, issuedAt: Self.now, with: signingKey.privateKey)
        let opened = try SignedPush(envelope: signed.envelope)
        #expect(opened == signed)
        let attached = try #require(signed.attached)
        #expect(try SignedPush(attached: attached) == signed)
        // Attached, it is still the JSON the app reads: the document's members and one more.
        #expect(try Self.object(attached).keys.sorted() == ["aps", "herald_signature", "kasia"])
        try SignedPush(attached: attached).verify(publicKey: signingKey.privateKey.publicKey, now: Self.now, window: 60)
        // An empty document keeps its form too.
        let empty = SignedPush(signing: Array("{}".utf8), issuedAt: 7, with: signingKey.privateKey)
        #expect(try SignedPush(attached: try #require(empty.attached)).document == Array("{}".utf8))
        #expect(SignedPush(signing: Array("[1]".utf8), issuedAt: 7, with: signingKey.privateKey).attached == nil)
        // The forms' bytes, exactly as docs/signed-pushes.md writes them, for any issue time.
        for time: Int64 in [0, 7, 10, 99, 100, Self.now, Int64.max, -1, Int64.min] {
            let push = SignedPush(document: Array("{}".utf8), issuedAt: time, signature: Array(repeating: 0xFB, count: 64))
            let sig = String(repeating: "-_v7", count: 21) + "-w"  // 0xFB × 64 in base64url
            #expect(SignedPush.signingInput(document: push.document, issuedAt: time) == Array("herald-push-v1\n\(time)\n{}".utf8))
            #expect(push.envelope == Array(#"{"herald":1,"iat":\#(time),"sig":"\#(sig)","doc":{}}"#.utf8))
            #expect(push.attached == Array(#"{"herald_signature":"\#(time).\#(sig)"}"#.utf8))
        }
    }

    @Test("a byte changed anywhere in a signed push, sealed or not, is refused")
    func everyByte() throws {
        let keys = SealedPushKeys()
        let unsealed = try prepared(Self.alert(), keys: nil).payload
        let sealedText = try #require(try Self.object(try prepared(Self.alert(), keys: keys).payload)["herald_sealed"] as? String)
        let sealed = try #require(Base64URLText.decode(sealedText))
        let open = try authenticator(keys)
        #expect(try open.document(payload: unsealed) == Self.document)
        #expect(try open.document(sealed: sealedText) == Self.document)
        for index in unsealed.indices {
            var changed = unsealed
            changed[index] ^= 0x01
            #expect(throws: PushRejection.self, "byte \(index) of the unsealed push") { try open.document(payload: changed) }
        }
        for index in sealed.indices {
            var changed = sealed
            changed[index] ^= 0x01
            #expect(throws: PushRejection.self, "byte \(index) of the sealed push") { try open.document(sealed: Base64URLText.encode(changed)) }
        }
    }

    @Test("another key, a replay past the window, a push from the future, and another device's sealed push are each refused with their reason")
    func refusals() throws {
        let keys = SealedPushKeys()
        let forged = SignedPush(signing: Self.document, issuedAt: Self.now, with: PushSigningKey().privateKey)
        #expect(throws: PushRejection.badSignature) { try authenticator(nil).document(payload: try #require(forged.attached)) }
        let push = try prepared(Self.alert(), keys: nil).payload
        #expect(throws: PushRejection.stale) { try authenticator(nil, at: Self.now + 86_401).document(payload: push) }
        #expect(try authenticator(nil, at: Self.now + 86_400).document(payload: push) == Self.document)
        #expect(throws: PushRejection.fromTheFuture) { try authenticator(nil, at: Self.now - 301).document(payload: push) }
        let sealed = try Self.object(try prepared(Self.alert(), keys: keys).payload)
        #expect(throws: PushRejection.notForThisDevice) { try authenticator(SealedPushKeys()).document(userInfo: sealed) }
        #expect(throws: PushRejection.noKeys) { try authenticator(nil).document(userInfo: sealed) }
        #expect(throws: PushRejection.notSealed) { try authenticator(keys).document(userInfo: try Self.object(push)) }
        #expect(throws: PushRejection.unsigned) { try authenticator(nil).document(payload: Self.document) }
    }

    @Test("Apple sees the generic alert and the ciphertext, Google the ciphertext alone; the phone opens the same document")
    func whatTheServicesSee() throws {
        let keys = SealedPushKeys()
        let sealed = try prepared(Self.alert(), keys: keys)
        let apns = try Self.object(sealed.payload)
        #expect(apns.keys.sorted() == ["aps", "herald_sealed"])
        #expect(NSDictionary(dictionary: apns["aps"] as? [String: Any] ?? [:]) == ["alert": ["loc-key": "New message", "body": "New message"], "mutable-content": 1])
        #expect(sealed.fcmData?.keys.sorted() == ["herald_sealed"])
        #expect(!String(decoding: sealed.payload, as: UTF8.self).contains("Kasia"))
        #expect(try authenticator(keys).document(userInfo: apns) == Self.document)
        #expect(try authenticator(keys).document(fcmData: try #require(sealed.fcmData)) == Self.document)
        // A silent push wakes the app without an alert.
        let silent = try prepared(RenderedPush(pushType: .background, priority: .considerate, collapseID: nil, payload: Array(#"{"aps":{"content-available":1},"c":"x"}"#.utf8)), keys: keys)
        #expect(NSDictionary(dictionary: try Self.object(silent.payload)["aps"] as? [String: Any] ?? [:]) == ["content-available": 1])
        // Sealing off: the device's keys are not used, and the push is signed in clear.
        let clear = try prepared(Self.alert(), keys: keys, mode: .off)
        #expect(try authenticator(nil).document(payload: clear.payload) == Self.document)
    }

    @Test("a template's own sealed alert replaces the app's generic one for that template alone")
    func templateAlerts() throws {
        let keys = SealedPushKeys()
        let attributes = try DevicePushKeys(p256dh: keys.p256dh, auth: keys.authSecret).stored(in: DeviceAttributes(production: true))
        var sealing = PushSealing(signingKey: signingKey, genericAlert: "Something new")
        sealing.templateAlerts = ["kasia.payment": "New payment", "agent.event": SealedAlert(text: "Your agent waits", key: "AGENT_WAITS")]
        // Its loc-key is the text unless a key is named: Apple shows the app's translation, else the key.
        for (template, shown, key) in [
            ("kasia.payment", "New payment", "New payment"), ("agent.event", "Your agent waits", "AGENT_WAITS"),
            ("kasia.handshake", "Something new", "Something new"), (nil, "Something new", "Something new"),
        ] as [(String?, String, String)] {
            var signatures = SignedDocuments()
            let push = sealing.prepare(Self.alert(), for: attributes, template: template, issuedAt: Self.now, limit: 4_096, signatures: &signatures)
            let apns = try Self.object(push.payload)
            #expect(NSDictionary(dictionary: apns["aps"] as? [String: Any] ?? [:]) == ["alert": ["loc-key": key, "body": shown], "mutable-content": 1], "\(template ?? "none")")
            #expect(try authenticator(keys).document(userInfo: apns) == Self.document)
        }
    }

    @Test("a sealed alert with every presentation key past the 4,096-byte limit is accepted: the body gives way, never how it rings")
    func presentationAtTheLimit() throws {
        let keys = SealedPushKeys()
        let body = String(repeating: "x", count: 3_000)
        let presentation = #""sound":"chime.caf","category":"kasia.message","interruption-level":"time-sensitive","relevance-score":0.5,"badge":99999"#
        let document = #"{"aps":{"alert":{"title":"Alice","body":"\#(body)"},\#(presentation)},"k":"v"}"#
        #expect(try prepared(Self.alert(Array(document.utf8)), keys: nil).payload.count <= 4_096, "unsealed, it fits as it is")
        let sealed = try prepared(Self.alert(Array(document.utf8)), keys: keys)
        #expect(sealed.payload.count <= 4_096)
        let outer = try Self.object(sealed.payload)
        #expect(NSDictionary(dictionary: outer["aps"] as? [String: Any] ?? [:]) == NSDictionary(dictionary: [
            "alert": ["loc-key": "New message", "body": "New message"], "mutable-content": 1, "sound": "chime.caf", "category": "kasia.message",
            "interruption-level": "time-sensitive", "relevance-score": 0.5, "badge": 99_999,
        ]))
        // Inside, the same presentation, and the body shortened to fit.
        let opened = try Self.object(try authenticator(keys).document(userInfo: outer))
        let aps = try #require(opened["aps"] as? [String: Any])
        #expect(aps["sound"] as? String == "chime.caf" && aps["badge"] as? Int == 99_999 && aps["interruption-level"] as? String == "time-sensitive")
        let shortened = try #require((aps["alert"] as? [String: Any])?["body"] as? String)
        #expect(shortened.count < body.count && shortened.hasSuffix("…"))
    }

    @Test("a sealed alert carries its presentation outside the seal (sound, category, interruption level, relevance, badge) and nothing else of it: no thread, no text")
    func presentationOutsideTheSeal() throws {
        let keys = SealedPushKeys()
        let attributes = try DevicePushKeys(p256dh: keys.p256dh, auth: keys.authSecret).stored(in: DeviceAttributes(production: true))
        let document = #"{"aps":{"alert":{"title":"Alice","body":"Hey"},"thread-id":"kaspa:qalice","sound":"chime.caf","category":"kasia.message","interruption-level":"time-sensitive","relevance-score":0.5,"badge":2},"kasia":{"txId":"t"}}"#
        let push = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(document.utf8))
        var signatures = SignedDocuments()
        let sealed = PushSealing(signingKey: signingKey).prepare(push, for: attributes, issuedAt: Self.now, limit: 4_096, signatures: &signatures)
        let outer = try Self.object(sealed.payload)
        let expected: [String: Any] = [
            "alert": ["loc-key": "New message", "body": "New message"], "mutable-content": 1, "sound": "chime.caf", "category": "kasia.message",
            "interruption-level": "time-sensitive", "relevance-score": 0.5, "badge": 2,
        ]
        #expect(NSDictionary(dictionary: outer["aps"] as? [String: Any] ?? [:]) == NSDictionary(dictionary: expected), "\(outer)")
        #expect(Set(outer.keys) == ["aps", PushSealing.sealedMember])
        #expect(try authenticator(keys).document(userInfo: outer) == Array(document.utf8))
        // The extension's one call opens it and hands back the whole presentation, the thread
        // (which only the seal carried) included.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-presentation-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = HeraldNotificationService(
            store: try SharedStore(directory: directory), resolver: try NotificationContentResolver(cipher: KasiaCipher()), authenticator: try authenticator(keys))
        let (shown, rejection) = service.handle(userInfo: outer)
        #expect(rejection == nil)
        #expect(shown.presentation == NotificationPresentation(
            threadIdentifier: "kaspa:qalice", category: "kasia.message", sound: "chime.caf", interruptionLevel: "time-sensitive", relevanceScore: 0.5, badge: 2))
    }

    @Test("a device's sealing key is kept for its lifetime and for a bounded number of devices; each push still has its own salt, and opens; a lifetime of 0 makes a key per push")
    func sealingSessions() throws {
        let keys = SealedPushKeys()
        let attributes = try DevicePushKeys(p256dh: keys.p256dh, auth: keys.authSecret).stored(in: DeviceAttributes(production: true))
        var sealing = PushSealing(signingKey: signingKey)
        sealing.sessions = SealingSessions(lifetime: 3_600, capacity: 2)
        let start = Date(timeIntervalSince1970: TimeInterval(Self.now))
        func sealed(at date: Date, by sealing: PushSealing) throws -> [UInt8] {
            var signatures = SignedDocuments()
            let push = sealing.prepare(Self.alert(), for: attributes, issuedAt: Self.now, limit: 4_096, signatures: &signatures, now: date)
            let text = try #require(try Self.object(push.payload)["herald_sealed"] as? String)
            #expect(try authenticator(keys).document(sealed: text) == Self.document)
            return try #require(Base64URLText.decode(text))
        }
        let first = try sealed(at: start, by: sealing)
        let second = try sealed(at: start + 3_599, by: sealing)
        let later = try sealed(at: start + 3_601, by: sealing)
        // The key id (the application server's public key) follows the salt and record size.
        #expect(first[21..<86] == second[21..<86] && first[0..<16] != second[0..<16])
        #expect(later[21..<86] != first[21..<86])
        for _ in 0..<3 {
            let other = SealedPushKeys()
            var signatures = SignedDocuments()
            _ = sealing.prepare(
                Self.alert(), for: try DevicePushKeys(p256dh: other.p256dh, auth: other.authSecret).stored(in: DeviceAttributes(production: true)),
                issuedAt: Self.now, limit: 4_096, signatures: &signatures, now: start)
        }
        #expect(sealing.sessions.count <= 2)

        var perPush = PushSealing(signingKey: signingKey)
        perPush.sessions = SealingSessions(lifetime: 0)
        perPush.registered(attributes, now: start)
        let one = try sealed(at: start, by: perPush), two = try sealed(at: start, by: perPush)
        #expect(one[21..<86] != two[21..<86] && perPush.sessions.count == 0)
    }

    @Test("past its budget the sealing-key cache drops its older half: the newer devices keep their keys, the older get new ones; 160 MiB keeps 1,048,576 devices")
    func sealingSessionsBudget() throws {
        #expect(SealingSessions.capacity(budgetMiB: SealingSessions.defaultBudgetMiB) == 1_048_576)
        #expect(SealingSessions().capacity == 1_048_576)
        var sealing = PushSealing(signingKey: signingKey)
        sealing.sessions = SealingSessions(lifetime: 3_600, capacity: 4)
        let start = Date(timeIntervalSince1970: TimeInterval(Self.now))
        let devices = try (0..<5).map { _ in
            let keys = SealedPushKeys()
            return try DevicePushKeys(p256dh: keys.p256dh, auth: keys.authSecret).stored(in: DeviceAttributes(production: true))
        }
        /// The application server's public key of a push sealed to `device` now.
        func serverKey(_ device: DeviceAttributes, at date: Date) throws -> ArraySlice<UInt8> {
            var signatures = SignedDocuments()
            let push = sealing.prepare(Self.alert(), for: device, issuedAt: Self.now, limit: 4_096, signatures: &signatures, now: date)
            let text = try #require(try Self.object(push.payload)["herald_sealed"] as? String)
            return try #require(Base64URLText.decode(text))[21..<86]
        }
        var first: [ArraySlice<UInt8>] = []
        for (i, device) in devices.prefix(4).enumerated() { first.append(try serverKey(device, at: start + TimeInterval(i))) }
        #expect(sealing.sessions.count == 4)
        // A fifth device: the cache is full, so the older half goes (made at or before the median second).
        _ = try serverKey(devices[4], at: start + 4)
        #expect(sealing.sessions.count == 2)
        #expect(try serverKey(devices[3], at: start + 5) == first[3], "the newest kept its key")
        #expect(try serverKey(devices[0], at: start + 5) != first[0], "the oldest was dropped and made again")
    }

    @Test("registering push_keys makes the device's sealing key, so its pushes do not: they use the registration's key until it expires, and registering again makes another")
    func keyMadeAtRegistration() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sealing-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(path: directory.appendingPathComponent("herald.sqlite").path)
        try await store.migrate()
        let start = Date(timeIntervalSince1970: TimeInterval(Self.now))
        let clock = ManualClock(now: start)
        var sealing = PushSealing(signingKey: signingKey)
        sealing.sessions = SealingSessions(lifetime: 3_600)
        var unsealed = AppSettings(id: "plain")
        unsealed.sealing = PushSealing(signingKey: signingKey, mode: .off)
        var app = AppSettings(id: "kasia")
        app.sealing = sealing
        let registrar = DeviceRegistrar(store: store, apps: AppDirectory([app, unsealed]), rules: .init(), clock: clock)
        let keys = SealedPushKeys()
        let token = String(repeating: "ab", count: 32)
        func register(app: String = "kasia", keys: SealedPushKeys? = keys, token: String = token) async throws {
            _ = try await registrar.register(
                .init(
                    platform: "ios", tokenKind: nil, deviceToken: token, subscription: nil, environment: nil, deviceID: nil,
                    watch: .init(watched: ["session:a"], own: nil, routes: nil),
                    pushKeys: keys.map { .init(p256dh: $0.p256dh, auth: $0.authSecret) }),
                app: app, grant: .anyIdentity)
        }
        /// The key id (the application server's public key) of the push the registered device gets at `date`.
        func keyID(at date: Date) async throws -> [UInt8] {
            let device = try #require(try await store.devices(app: "kasia", tokens: [token]).first)
            var signatures = SignedDocuments()
            let push = sealing.prepare(Self.alert(), for: device.attributes, issuedAt: Self.now, limit: 4_096, signatures: &signatures, now: date)
            let text = try #require(try Self.object(push.payload)["herald_sealed"] as? String)
            #expect(try authenticator(keys).document(sealed: text) == Self.document)
            return Array(try #require(Base64URLText.decode(text))[21..<86])
        }

        try await register()
        #expect(sealing.sessions.count == 1)
        // Had the first push made the key, the one after the registration's key expired would reuse it.
        let early = try await keyID(at: start + 3_599)
        let late = try await keyID(at: start + 3_601)
        #expect(early != late)
        #expect(try await keyID(at: start + 3_650) == late)
        clock.advance(by: 3_650)
        try await register()
        #expect(try await keyID(at: start + 3_650) != late)
        // No key where nothing is sealed: an app that does not seal, a device without keys.
        try await register(app: "plain")
        try await register(keys: nil, token: String(repeating: "cd", count: 32))
        #expect(sealing.sessions.count == 1 && unsealed.sealing?.sessions.count == 0)
        // The sealed device itself is never registered again without its keys: its pushes would go in clear.
        await #expect(throws: Refusal.self) { try await register(keys: nil) }
    }

    @Test("over the service's limit, Kasia's inline payload goes first, then the push is sealed and signed again")
    func shrinksBeforeSealing() throws {
        let keys = SealedPushKeys()
        let inline = String(repeating: "ab", count: 1_400)
        let big = Array(#"{"aps":{"alert":{"title":"Kasia","body":"New message"}},"kasia":{"payload":"\#(inline)","txId":"ab"}}"#.utf8)
        let sealed = try prepared(Self.alert(big), keys: keys)
        #expect(sealed.payload.count <= 4_096)
        let document = try authenticator(keys).document(userInfo: try Self.object(sealed.payload))
        let kasia = try #require(try Self.object(document)["kasia"] as? [String: Any])
        #expect(kasia["payload"] is NSNull && kasia["txId"] as? String == "ab")
        // What cannot be sealed whole even shrunk never goes in clear: the generic alert alone.
        let huge = Array(#"{"aps":{"alert":{"title":"Kasia","body":"hi"}},"data":"\#(String(repeating: "x", count: 5_000))"}"#.utf8)
        let refused = try prepared(Self.alert(huge), keys: keys, limit: 8_000)
        #expect(try Self.object(refused.payload).keys.sorted() == ["aps"] && refused.fcmData == [:])
        #expect(throws: PushRejection.notSealed) { try authenticator(keys).document(userInfo: try Self.object(refused.payload)) }
        // Small enough, it keeps its inline payload.
        let small = try prepared(Self.alert(big), keys: keys, limit: 8_000)
        #expect(try authenticator(keys).document(userInfo: try Self.object(small.payload)) == big)
    }

    @Test("the independent Python verifier (cryptography, http_ece) accepts what HeraldKit accepts and refuses the same forgeries")
    func pythonVerifier() async throws {
        let keys = SealedPushKeys()
        let sealed = try prepared(Self.alert(), keys: keys)
        let unsealed = try prepared(Self.alert(), keys: nil)
        let forged = try #require(SignedPush(signing: Self.document, issuedAt: Self.now, with: PushSigningKey().privateKey).attached)
        var flipped = unsealed.payload
        flipped[20] ^= 0x01
        let apns = String(decoding: sealed.payload, as: UTF8.self)
        var tamperedSealed = try #require(sealed.fcmData)
        let text = try #require(tamperedSealed["herald_sealed"])
        var bytes = try #require(Base64URLText.decode(text))
        bytes[bytes.count - 5] ^= 0x01
        tamperedSealed["herald_sealed"] = Base64URLText.encode(bytes)
        var resized = try #require(sealed.fcmData)
        var header = try #require(Base64URLText.decode(text))
        header[18] ^= 0x01  // the record size, which RFC 8188 leaves unauthenticated
        resized["herald_sealed"] = Base64URLText.encode(header)
        let cases: [(String, Any, Int64, String?)] = [
            ("apns", apns, Self.now, nil), ("fcm", try #require(sealed.fcmData), Self.now, nil),
            ("payload", String(decoding: unsealed.payload, as: UTF8.self), Self.now, nil),
            ("payload", String(decoding: flipped, as: UTF8.self), Self.now, "badSignature"),
            ("payload", String(decoding: forged, as: UTF8.self), Self.now, "badSignature"),
            ("payload", String(decoding: unsealed.payload, as: UTF8.self), Self.now + 86_401, "stale"),
            ("fcm", tamperedSealed, Self.now, "notForThisDevice"), ("fcm", resized, Self.now, "malformed"),
        ]
        for (form, push, now, expected) in cases {
            let answer = try await Self.python(form: form, push: push, pinned: pinned, keys: keys, now: now)
            if let expected {
                #expect(answer["error"] as? String == expected, "\(form): \(answer)")
            } else {
                #expect((answer["document"] as? String).flatMap(Base64URLText.decode) == Self.document, "\(form): \(answer)")
            }
        }
    }

    /// Fixtures/verify_push.py's answer for one push.
    static func python(form: String, push: Any, pinned: String, keys: SealedPushKeys?, now: Int64) async throws -> [String: Any] {
        var request: [String: Any] = ["public_key": pinned, "form": form, "push": push, "now": now, "window": 86_400]
        if let keys {
            request["private_key"] = Base64URLText.encode(keys.privateKeyBytes)
            request["auth"] = keys.authSecret
        }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("verify-\(UUID()).json")
        try JSONSerialization.data(withJSONObject: request).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/verify_push.py")
        let output = try await runProcessOffPool(URL(fileURLWithPath: "/bin/sh"), ["-c", "python3 '\(script.path)' < '\(input.path)'"])
        let text = String(decoding: output.stdout, as: UTF8.self)
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "pip install cryptography http_ece: \(text) \(String(decoding: output.stderr, as: UTF8.self))")
    }

    @Test("a key trusted on first registration is never silently replaced; a shipped key is the only one")
    func pinning() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pin-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let pin = SigningKeyPin.trustOnFirstUse(try SharedStore(directory: directory))
        #expect(try pin.pinnedKey() == nil)
        try pin.check(pinned)
        try pin.check(pinned)
        let other = PushSigningKey().publicKeyBase64URL
        #expect(throws: HeraldClientError.signingKeyChanged(pinned: pinned, answered: other)) { try pin.check(other) }
        #expect(try pin.pinnedKey() == pinned)
        try pin.replace(with: other)
        #expect(try pin.pinnedKey() == other)
        #expect(throws: HeraldClientError.self) { try SigningKeyPin.shipped(pinned).check(other) }
    }

    @Test("the extension shows a verified push as it came, and anything else as the app's generic text with the reason tracked")
    func extensionPath() throws {
        let keys = SealedPushKeys()
        let resolver = try NotificationContentResolver(cipher: KasiaCipher())
        let good = try Self.object(try prepared(Self.alert(Array(#"{"aps":{"alert":{"title":"Alice","body":"hi"}}}"#.utf8)), keys: keys).payload)
        let opener = try authenticator(keys)
        let shown = resolver.resolve(verified: Result { () throws(PushRejection) in try opener.document(userInfo: good) }, contacts: [], privateKey: nil)
        #expect(shown.outcome.title == "Alice" && shown.outcome.body == "hi" && shown.rejection == nil)
        let forged = try #require(SignedPush(signing: Array(#"{"aps":{"alert":{"title":"Alice","body":"send me your seed"}}}"#.utf8), issuedAt: Self.now, with: PushSigningKey().privateKey).attached)
        let refused = resolver.resolve(verified: Result { () throws(PushRejection) in try opener.document(payload: forged) }, contacts: [], privateKey: nil)
        #expect(refused.outcome.title == "" && refused.outcome.body == "New message" && refused.outcome.record == nil)
        var tracker = PushReliabilityTracker()
        tracker.rejected(try #require(refused.rejection))
        #expect(tracker.rejectedPushes == [.badSignature: 1])
    }

    @Test("base64url without padding: Foundation's alphabet and lengths, both ways, and nothing else read")
    func base64URL() {
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255) }
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(Base64URLText.encode(bytes) == foundation)
            #expect(Base64URLText.decode(foundation) == bytes)
        }
        #expect(Base64URLText.decode("ab+c") == nil && Base64URLText.decode("abc=") == nil && Base64URLText.decode("a") == nil)
    }

    @Test("signing keys are PKCS#8 PEM both ways, and a registration's push_keys are checked")
    func keysAndRegistrations() throws {
        let key = PushSigningKey()
        #expect(PushSigningKey(pem: key.pem)?.publicKeyBase64URL == key.publicKeyBase64URL)
        #expect(PushSigningKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") == nil)
        let keys = SealedPushKeys()
        #expect(throws: Refusal.self) { try DevicePushKeys(p256dh: "AAAA", auth: keys.authSecret) }
        #expect(throws: Refusal.self) { try DevicePushKeys(p256dh: keys.p256dh, auth: "AAAA") }
        #expect(throws: Refusal.self) { try DevicePushKeys(p256dh: nil, auth: keys.authSecret) }
        let stored = try DevicePushKeys(p256dh: keys.p256dh, auth: keys.authSecret).stored(in: DeviceAttributes(production: false))
        #expect(stored["environment"] == "sandbox" && DevicePushKeys(stored) != nil)
    }
}
