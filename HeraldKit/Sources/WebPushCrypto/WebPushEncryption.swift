#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif
public import Crypto

// RFC 8291 message encryption, shared by Herald's Web Push (it encrypts to a browser's
// subscription) and HeraldKit (it opens what is sealed to the keys a device registered).

/// Why a message could not be encrypted or decrypted.
public enum WebPushCryptoError: Error, Sendable, Hashable {
    /// More plaintext than one 4,096-byte record carries (3,993 bytes).
    case tooLarge(bytes: Int)
    /// The body is not one RFC 8188 `aes128gcm` record Herald can read.
    case malformed(String)
    /// The record did not authenticate (wrong keys, or changed on the way).
    case authentication
}

/// RFC 8291 message encryption: `Content-Encoding: aes128gcm` (RFC 8188), one record, a fresh
/// ephemeral P-256 key and 16-byte salt per message.
public enum WebPushEncryption {
    /// The record size written in the header: the whole body of a push fits one record.
    public static let recordSize = 4_096
    /// salt (16) ‖ rs (4) ‖ idlen (1) ‖ keyid (65).
    public static let headerLength = 86
    /// What one record carries: 4,096 − 86 − 1 (delimiter) − 16 (tag).
    public static let maximumPlaintext = recordSize - headerLength - 1 - 16

    /// Encrypts `plaintext` to a user agent's keys.
    /// - Parameters:
    ///   - receiver: the user agent's P-256 public key (`p256dh`).
    ///   - receiverBytes: the same key as its 65-byte uncompressed point (kept by the caller, so
    ///     it is not serialised again per message).
    ///   - auth: the user agent's 16-byte auth secret.
    ///   - ephemeral: the application server's key for this message; a fresh one unless a test
    ///     reproduces RFC 8291's example.
    ///   - salt: 16 random bytes unless given.
    public static func encrypt(
        _ plaintext: [UInt8], to receiver: P256.KeyAgreement.PublicKey, receiverBytes: [UInt8], auth: [UInt8],
        ephemeral: P256.KeyAgreement.PrivateKey? = nil, salt: [UInt8]? = nil
    ) throws(WebPushCryptoError) -> [UInt8] {
        guard plaintext.count <= maximumPlaintext else { throw .tooLarge(bytes: plaintext.count) }
        return try WebPushSession(to: receiver, receiverBytes: receiverBytes, auth: auth, ephemeral: ephemeral).encrypt(plaintext, salt: salt)
    }

    /// A fresh P-256 key from 32 bytes of the system's random source. swift-crypto's own
    /// generator runs a FIPS pairwise-consistency test (an ECDSA signature and its check) on every
    /// key, which made it cost more than the ECDH itself; a scalar outside 1..<n (about one draw
    /// in 2^32) is drawn again.
    static func freshKey() -> P256.KeyAgreement.PrivateKey {
        while true {
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: randomBytes(32)) { return key }
        }
    }

    /// Bytes from the system's CSPRNG in one call (`SystemRandomNumberGenerator` asks the kernel
    /// for 8 bytes at a time: six system calls for a key and a salt).
    static func randomBytes(_ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            arc4random_buf(buffer.baseAddress!, count)
            initialized = count
        }
    }

    /// Decrypts one `aes128gcm` body with the user agent's private key and auth secret (what a
    /// browser does; HeraldKit opens sealed pushes with it, and the Web Push simulator records
    /// what it was sent).
    public static func decrypt(_ body: [UInt8], privateKey: P256.KeyAgreement.PrivateKey, auth: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        guard body.count >= 21 else { throw .malformed("shorter than the RFC 8188 header") }
        let salt = Array(body[0..<16])
        let recordSize = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let idLength = Int(body[20])
        guard idLength == 65, body.count >= 21 + idLength + 17 else { throw .malformed("the key id is not a 65-byte P-256 public key") }
        let senderPublic = Array(body[21..<(21 + idLength)])
        let record = Array(body[(21 + idLength)...])
        guard recordSize >= 18, record.count <= recordSize else { throw .malformed("more than one record") }
        guard let sender = try? P256.KeyAgreement.PublicKey(x963Representation: senderPublic),
            let shared = try? privateKey.sharedSecretFromKeyAgreement(with: sender)
        else { throw .malformed("the key id is not a P-256 public key") }
        let (cek, nonce) = contentKeys(
            ecdhSecret: shared.withUnsafeBytes { Array($0) }, auth: auth,
            receiverPublic: Array(privateKey.publicKey.x963Representation), senderPublic: senderPublic, salt: salt)
        let padded: [UInt8]
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: nonce), ciphertext: record.dropLast(16), tag: record.suffix(16))
            padded = Array(try AES.GCM.open(box, using: SymmetricKey(data: cek)))
        } catch {
            throw .authentication
        }
        // Padding is zeros after the delimiter; the last (only) record's delimiter is 0x02.
        guard let end = padded.lastIndex(where: { $0 != 0 }), padded[end] == 0x02 else {
            throw .malformed("the record does not end with the last-record delimiter")
        }
        return Array(padded[..<end])
    }

    /// RFC 8291 §3.3–3.4 and RFC 8188 §2.2: the content-encryption key and the nonce.
    static func contentKeys(
        ecdhSecret: [UInt8], auth: [UInt8], receiverPublic: [UInt8], senderPublic: [UInt8], salt: [UInt8]
    ) -> (cek: [UInt8], nonce: [UInt8]) {
        contentKeys(ikm: inputKeyingMaterial(ecdhSecret: ecdhSecret, auth: auth, receiverPublic: receiverPublic, senderPublic: senderPublic), salt: salt)
    }

    /// RFC 8291 §3.3: the key-combining step, which depends on the two keys and the auth secret only.
    static func inputKeyingMaterial(ecdhSecret: [UInt8], auth: [UInt8], receiverPublic: [UInt8], senderPublic: [UInt8]) -> [UInt8] {
        let prkKey = RecordPrimitives.hmacSHA256(key: auth, message: ecdhSecret)
        var keyInfo = webPushInfo
        keyInfo.reserveCapacity(webPushInfo.count + 65 + 65 + 1)
        keyInfo += receiverPublic
        keyInfo += senderPublic
        keyInfo.append(1)
        return RecordPrimitives.hmacSHA256(key: prkKey, message: keyInfo)
    }

    /// RFC 8188 §2.2–2.3: the salt's content-encryption key and nonce.
    static func contentKeys(ikm: [UInt8], salt: [UInt8]) -> (cek: [UInt8], nonce: [UInt8]) {
        let prk = RecordPrimitives.hmacSHA256(key: salt, message: ikm)
        let cek = RecordPrimitives.hmacSHA256(key: prk, message: cekInfo).prefix(16)
        let nonce = RecordPrimitives.hmacSHA256(key: prk, message: nonceInfo).prefix(12)
        return (Array(cek), Array(nonce))
    }

    /// The HKDF info strings with the expand step's counter (RFC 8291 §3.4, RFC 8188 §2.2–2.3).
    private static let webPushInfo = Array("WebPush: info".utf8) + [0]
    private static let cekInfo = Array("Content-Encoding: aes128gcm".utf8) + [0, 1]
    private static let nonceInfo = Array("Content-Encoding: nonce".utf8) + [0, 1]
}

/// One application-server key agreed with one receiver (its ECDH and RFC 8291's key combining
/// done once), sealing messages to it, each with a fresh 16-byte salt and so its own content key
/// and nonce. `WebPushEncryption.encrypt` makes one per message, as RFC 8291 has it; Herald's
/// sealed pushes keep one per device for a bounded time, which saves the ECDH on every push after
/// the first, and readers cannot tell the difference.
public struct WebPushSession: Sendable {
    let ikm: [UInt8]
    let senderPublic: [UInt8]

    /// - Parameters:
    ///   - receiver: the receiver's P-256 public key (`p256dh`), and `receiverBytes` its 65-byte point.
    ///   - auth: the receiver's 16-byte auth secret.
    ///   - ephemeral: the application server's key; a fresh one unless a test reproduces RFC 8291's example.
    public init(
        to receiver: P256.KeyAgreement.PublicKey, receiverBytes: [UInt8], auth: [UInt8], ephemeral: P256.KeyAgreement.PrivateKey? = nil
    ) throws(WebPushCryptoError) {
        guard auth.count == 16 else { throw .malformed("the auth secret is 16 bytes") }
        let ephemeral = ephemeral ?? WebPushEncryption.freshKey()
        guard let shared = try? ephemeral.sharedSecretFromKeyAgreement(with: receiver) else {
            throw .malformed("p256dh is not a P-256 public key")
        }
        senderPublic = Array(ephemeral.publicKey.x963Representation)
        ikm = WebPushEncryption.inputKeyingMaterial(
            ecdhSecret: shared.withUnsafeBytes { Array($0) }, auth: auth, receiverPublic: receiverBytes, senderPublic: senderPublic)
    }

    /// A session made before, from what it kept (`inputKeyingMaterial`, `senderPublicKey`): a
    /// sender that keeps many stores them compactly and makes the session again per message.
    public init(inputKeyingMaterial: [UInt8], senderPublicKey: [UInt8]) {
        ikm = inputKeyingMaterial
        senderPublic = senderPublicKey
    }

    /// RFC 8291's combined key (32 bytes): a secret, as the ECDH's result is.
    public var inputKeyingMaterial: [UInt8] { ikm }

    /// The application server's public key, as its 65-byte point.
    public var senderPublicKey: [UInt8] { senderPublic }

    /// One `aes128gcm` body: one record, the last, with a fresh salt unless one is given.
    public func encrypt(_ plaintext: [UInt8], salt: [UInt8]? = nil) throws(WebPushCryptoError) -> [UInt8] {
        guard plaintext.count <= WebPushEncryption.maximumPlaintext else { throw .tooLarge(bytes: plaintext.count) }
        let salt = salt ?? WebPushEncryption.randomBytes(16)
        guard salt.count == 16 else { throw .malformed("the salt is 16 bytes") }
        let (cek, nonce) = WebPushEncryption.contentKeys(ikm: ikm, salt: salt)
        // One record, the last: the plaintext and the 0x02 delimiter, no padding.
        var record = [UInt8]()
        record.reserveCapacity(plaintext.count + 1)
        record += plaintext
        record.append(0x02)
        var body = [UInt8]()
        body.reserveCapacity(WebPushEncryption.headerLength + record.count + 16)
        body += salt
        withUnsafeBytes(of: UInt32(WebPushEncryption.recordSize).bigEndian) { body += $0 }
        body.append(UInt8(senderPublic.count))
        body += senderPublic
        guard RecordPrimitives.sealAES128GCM(record, key: cek, nonce: nonce, appendingTo: &body) else {
            throw .malformed("AES-GCM refused the record")
        }
        return body
    }
}
