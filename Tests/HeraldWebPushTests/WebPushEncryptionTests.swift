import Crypto
import Foundation
import HeraldPushCore
@testable import HeraldWebPushCore
import Testing
@testable import WebPushCrypto

/// RFC 8291 message encryption: the RFC's own example byte for byte, round trips, refusals, and
/// Mozilla's independent `http_ece` package decrypting what Herald sends (and the reverse).
@Suite("Web Push encryption (RFC 8291, aes128gcm)")
struct WebPushEncryptionTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var i = hex.startIndex
        while i < hex.endIndex {
            let j = hex.index(i, offsetBy: 2)
            out.append(UInt8(hex[i..<j], radix: 16)!)
            i = j
        }
        return out
    }

    // RFC 8291 Appendix A (reference/push-services.md §2.3).
    static let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
    static let senderPrivate = "c9f58f89813e9f8e872e71f42aa64e1757c9254dcc62b72ddc010bb4043ea11c"
    static let receiverPrivate = "ab5757a70dd4a53e553a6bbf71ffefea2874ec07a6b379e3c48f895a02dc33de"
    static let receiverPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
    static let salt = "0c6bfaadad67958803092d454676f397"
    static let body =
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    @Test("RFC 8291 Appendix A: the same ephemeral key and salt give the RFC's 144-byte body, and it decrypts")
    func appendixA() throws {
        let keys = try WebPushKeys(p256dh: Self.receiverPublic, auth: Self.auth)
        let ephemeral = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.bytes(Self.senderPrivate))
        let body = try WebPushEncryption.encrypt(Self.plaintext, to: keys, ephemeral: ephemeral, salt: Self.bytes(Self.salt))
        #expect(body.count == 144)
        #expect(Base64URL.encode(body) == Self.body)
        let receiver = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.bytes(Self.receiverPrivate))
        #expect(try WebPushEncryption.decrypt(body, privateKey: receiver, auth: keys.auth) == Self.plaintext)
    }

    @Test("a fresh key and salt per message: two bodies of one plaintext differ, both decrypt; up to 3,993 bytes, not one more")
    func freshPerMessage() throws {
        let receiver = P256.KeyAgreement.PrivateKey()
        let keys = WebPushKeys(publicKey: receiver.publicKey, auth: (0..<16).map { UInt8($0) })
        let a = try WebPushEncryption.encrypt(Self.plaintext, to: keys)
        let b = try WebPushEncryption.encrypt(Self.plaintext, to: keys)
        #expect(a != b && a[0..<16] != b[0..<16] && a[21..<86] != b[21..<86])
        #expect(try WebPushEncryption.decrypt(a, privateKey: receiver, auth: keys.auth) == Self.plaintext)
        let largest = [UInt8](repeating: 0x41, count: WebPushEncryption.maximumPlaintext)
        let full = try WebPushEncryption.encrypt(largest, to: keys)
        #expect(WebPushEncryption.maximumPlaintext == 3_993 && full.count == 4_096)
        #expect(try WebPushEncryption.decrypt(full, privateKey: receiver, auth: keys.auth) == largest)
        #expect(throws: WebPushCryptoError.tooLarge(bytes: 3_994)) { try WebPushEncryption.encrypt(largest + [0x41], to: keys) }
    }

    @Test("a changed byte, the wrong auth secret or the wrong key: decryption refuses")
    func tampering() throws {
        let receiver = P256.KeyAgreement.PrivateKey()
        let keys = WebPushKeys(publicKey: receiver.publicKey, auth: [UInt8](repeating: 7, count: 16))
        let body = try WebPushEncryption.encrypt(Self.plaintext, to: keys)
        var changed = body
        changed[100] ^= 0x01
        #expect(throws: WebPushCryptoError.authentication) { try WebPushEncryption.decrypt(changed, privateKey: receiver, auth: keys.auth) }
        #expect(throws: WebPushCryptoError.authentication) {
            try WebPushEncryption.decrypt(body, privateKey: receiver, auth: [UInt8](repeating: 8, count: 16))
        }
        #expect(throws: WebPushCryptoError.authentication) {
            try WebPushEncryption.decrypt(body, privateKey: P256.KeyAgreement.PrivateKey(), auth: keys.auth)
        }
        #expect(throws: WebPushCryptoError.self) { try WebPushEncryption.decrypt(Array(body.prefix(40)), privateKey: receiver, auth: keys.auth) }
    }

    @Test("subscription keys: strict base64url, a 65-byte point on P-256, a 16-byte auth secret", arguments: [
        ("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4=", "BTBZMqHH6r4Tts7J_aSIgg", WebPushKeyError.p256dh),
        ("BCVxsr7N/eNgVRqvHtD0zTZsEc6+VV+JvLexhqUzORcxaOzi6+AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", "BTBZMqHH6r4Tts7J_aSIgg", .p256dh),
        ("JXGyvs3942BVGq8e0PTNNmwRzr5VX4m8t7GGpTM5FzFo7OLr4BhZe9MEebhuPI-OztV3ylkYfpJGmQ22ggCLDg", "BTBZMqHH6r4Tts7J_aSIgg", .p256dh),
        ("BAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE", "BTBZMqHH6r4Tts7J_aSIgg", .p256dh),
        ("", "BTBZMqHH6r4Tts7J_aSIgg", .p256dh),
        ("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", "BTBZMqHH6r4Tts7J_aSI", .auth),
        ("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", "BTBZMqHH6r4Tts7J_aSIgg==", .auth),
    ])
    func badKeys(p256dh: String, auth: String, error: WebPushKeyError) {
        #expect(throws: error) { try WebPushKeys(p256dh: p256dh, auth: auth) }
    }

    static func ece(_ arguments: [String]) async throws -> String? { try await runFixture("ece_interop.py", arguments, needs: "http_ece") }

    @Test("http_ece (Mozilla's reference implementation, PyPI) decrypts Herald's messages, and Herald decrypts http_ece's")
    func httpECEInterop() async throws {
        let receiver = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let keys = WebPushKeys(publicKey: receiver.publicKey, auth: auth)
        let message = Array(#"{"aps":{"alert":{"title":"Kasia","body":"New message"}},"tx_id":"ab"}"#.utf8)
        let body = try WebPushEncryption.encrypt(message, to: keys)
        let decrypted = try await Self.ece(["decrypt", Base64URL.encode(body), Base64URL.encode(Array(receiver.rawRepresentation)), Base64URL.encode(auth)])
        #expect(decrypted.flatMap { Base64URL.decode(Substring($0)) } == message)

        guard let theirs = try await Self.ece(["encrypt", Base64URL.encode(keys.p256dh), Base64URL.encode(auth), Base64URL.encode(message)]),
            let theirBody = Base64URL.decode(Substring(theirs))
        else { return }
        #expect(try WebPushEncryption.decrypt(theirBody, privateKey: receiver, auth: auth) == message)
    }

    @Test("the record primitives give swift-crypto's bytes: HMAC-SHA-256 for keys of 0 to 100 bytes")
    func hmacAgrees() {
        for length in [0, 1, 16, 32, 63, 64, 65, 100] {
            let key = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let message = Array("WebPush: info".utf8) + [0, 1, 2, 3]
            #expect(RecordPrimitives.hmacSHA256(key: key, message: message) == Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))))
        }
    }

    @Test("the record primitives give swift-crypto's bytes: AES-128-GCM, appended after what the body holds; a wrong key or nonce length seals nothing")
    func aesAgrees() throws {
        let key = (0..<16).map { UInt8($0 &* 7 &+ 1) }
        let nonce = (0..<12).map { UInt8($0 &* 13 &+ 5) }
        for length in [0, 1, 15, 16, 17, 255, WebPushEncryption.maximumPlaintext + 1] {
            let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 101 &+ 3) }
            var body: [UInt8] = [9, 8, 7]
            #expect(RecordPrimitives.sealAES128GCM(plaintext, key: key, nonce: nonce, appendingTo: &body))
            let box = try AES.GCM.seal(plaintext, using: SymmetricKey(data: key), nonce: AES.GCM.Nonce(data: nonce))
            #expect(body == [9, 8, 7] + Array(box.ciphertext) + Array(box.tag))
        }
        var body: [UInt8] = [1]
        #expect(!RecordPrimitives.sealAES128GCM([1, 2, 3], key: Array(key.prefix(15)), nonce: nonce, appendingTo: &body))
        #expect(!RecordPrimitives.sealAES128GCM([1, 2, 3], key: key, nonce: Array(nonce.prefix(8)), appendingTo: &body))
        #expect(body == [1])
    }
}
