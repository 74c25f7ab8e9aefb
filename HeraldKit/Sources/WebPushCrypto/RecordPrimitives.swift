import Crypto
import Foundation

#if canImport(FoundationEssentials)
import FoundationEssentials  // Linux: its Data members need the import; Apple's Foundation has them
#endif
#if canImport(CCryptoBoringSSL) && !HERALDKIT_APPLE_PATH
internal import CCryptoBoringSSL
#endif

/// The two primitives of RFC 8291's per-message work, AES-128-GCM sealing and HMAC-SHA-256, on
/// byte arrays. Where swift-crypto is built on its BoringSSL (Linux), BoringSSL's one-shot
/// functions are called directly: swift-crypto's entry points are generic and run unspecialised
/// from another module, and in a running `herald serve` its `AES.GCM.seal` costs a sealed push
/// about 11 µs of CPU against about 1 µs for the BoringSSL call it wraps. Elsewhere (Apple's
/// platforms, where swift-crypto is CryptoKit; `.ci/heraldkit-apple-path` compiles that path) both
/// go through swift-crypto. The two paths give the same bytes (`WebPushEncryptionTests`).
/// `CCryptoBoringSSL` is swift-crypto's own module, built but not exported as a product: if a
/// version stops building it under that name, this falls back to swift-crypto by itself.
enum RecordPrimitives {
    /// Seals `plaintext` with AES-128-GCM under a 16-byte `key` and a 12-byte `nonce`, no
    /// additional data, and appends the ciphertext and its 16-byte tag to `out`.
    /// - Returns: false, with `out` unchanged, when the key or nonce has the wrong length.
    static func sealAES128GCM(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], appendingTo out: inout [UInt8]) -> Bool {
        guard key.count == 16, nonce.count == 12 else { return false }
        #if canImport(CCryptoBoringSSL) && !HERALDKIT_APPLE_PATH
        let start = out.count
        let length = plaintext.count + 16
        out += repeatElement(0, count: length)
        var context = EVP_AEAD_CTX()
        var written = 0
        let sealed = out.withUnsafeMutableBufferPointer { buffer in
            guard CCryptoBoringSSL_EVP_AEAD_CTX_init(&context, CCryptoBoringSSL_EVP_aead_aes_128_gcm(), key, 16, 16, nil) == 1 else { return false }
            defer { CCryptoBoringSSL_EVP_AEAD_CTX_cleanup(&context) }
            return CCryptoBoringSSL_EVP_AEAD_CTX_seal(
                &context, buffer.baseAddress! + start, &written, length, nonce, 12, plaintext, plaintext.count, nil, 0) == 1
        }
        guard sealed, written == length else {
            out.removeLast(length)
            return false
        }
        return true
        #else
        // `combined` (nonce, ciphertext, tag) is the box's storage; `ciphertext` and `tag` would copy.
        guard let box = try? AES.GCM.seal(plaintext, using: SymmetricKey(data: key), nonce: AES.GCM.Nonce(data: nonce)).combined else {
            return false
        }
        box.withUnsafeBytes { out += $0.dropFirst(12) }
        return true
        #endif
    }

    /// HMAC-SHA-256 (RFC 2104).
    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        #if canImport(CCryptoBoringSSL) && !HERALDKIT_APPLE_PATH
        [UInt8](unsafeUninitializedCapacity: 32) { digest, initialized in
            var length: UInt32 = 0
            let made = CCryptoBoringSSL_HMAC(CCryptoBoringSSL_EVP_sha256(), key, key.count, message, message.count, digest.baseAddress, &length)
            // Its context is on the stack and SHA-256 cannot fail: BoringSSL has nothing to report here.
            precondition(made != nil && length == 32, "HMAC-SHA-256 failed")
            initialized = 32
        }
        #else
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
        #endif
    }
}
