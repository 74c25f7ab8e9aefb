import Foundation
import HeraldKit
import HeraldPushCore
import HeraldTestSupport
import HeraldWebPushCore
import Testing
import WebPushCrypto

/// The keys a device registers for sealed pushes, and opening what is sealed to them: by Herald's
/// RFC 8291 encryption through the registration's own strings, and by Mozilla's `http_ece` (PyPI).
@Suite("HeraldKit: sealed push keys (RFC 8291)")
struct SealedPushKeysTests {
    static let document = Array(#"{"aps":{"alert":{"title":"Kasia","body":"New message"}},"kasia":{"txId":"ab"}}"#.utf8)

    @Test("what Herald seals to the registered p256dh and auth opens with the kept keys, and only with them")
    func heraldSealsHeraldKitOpens() throws {
        let keys = SealedPushKeys()
        // The server reads the registration's strings as it reads a browser's subscription.
        let registered = try WebPushKeys(p256dh: keys.p256dh, auth: keys.authSecret)
        let body = try WebPushEncryption.encrypt(Self.document, to: registered)
        let kept = try SealedPushKeys(privateKeyBytes: keys.privateKeyBytes, auth: keys.auth)
        #expect(try kept.open(body) == Self.document)
        // Printed (a log line, an interpolation), the keys say nothing of themselves.
        #expect("\(keys)" == "SealedPushKeys(…)" && String(reflecting: keys) == "SealedPushKeys(…)")

        var changed = body
        changed[changed.count - 20] ^= 1
        #expect(throws: SealedPushError.authentication) { try keys.open(changed) }
        #expect(throws: SealedPushError.authentication) { try SealedPushKeys().open(body) }
        #expect(throws: SealedPushError.malformed) { try keys.open(Array(body.prefix(40))) }
        #expect(throws: SealedPushError.invalidKeys) { try SealedPushKeys(privateKeyBytes: keys.privateKeyBytes, auth: [1, 2, 3]) }
        #expect(throws: SealedPushError.invalidKeys) { try SealedPushKeys(privateKeyBytes: [UInt8](repeating: 0, count: 32), auth: keys.auth) }
    }

    @Test("http_ece (Mozilla's, PyPI) encrypts to the registration's strings; HeraldKit opens it")
    func httpECESealsHeraldKitOpens() async throws {
        let keys = SealedPushKeys()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../HeraldWebPushTests/Fixtures/ece_interop.py").standardizedFileURL
        let output = try await runProcessOffPool(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, "encrypt", keys.p256dh, keys.authSecret, Base64URL.encode(Self.document)])
        try #require(output.status == 0, "pip install http_ece: \(String(decoding: output.stderr, as: UTF8.self))")
        let text = String(decoding: output.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let body = try #require(Base64URL.decode(Substring(text)))
        #expect(try keys.open(body) == Self.document)
    }
}
