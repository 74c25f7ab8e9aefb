public import Crypto
import Foundation
import PushSigning
import WebPushCrypto

/// A device's keys for sealed pushes: a P-256 key pair and a 16-byte auth secret, the shape of a
/// Web Push subscription's keys. HeraldKit makes them; the app keeps `privateKeyBytes` and `auth`
/// where its notification extension reads them (the keychain or the App Group) and registers
/// `p256dh` and `authSecret` as `push_keys`. A body sealed to them (RFC 8291 `aes128gcm`, one
/// record) opens with `open(_:)`.
public struct SealedPushKeys: Sendable, CustomStringConvertible {
    public let privateKey: P256.KeyAgreement.PrivateKey
    /// The 16-byte auth secret.
    public let auth: [UInt8]

    /// Fresh keys from the system's random source.
    public init() {
        privateKey = P256.KeyAgreement.PrivateKey()
        var generator = SystemRandomNumberGenerator()
        auth = (0..<16).map { _ in generator.next() }
    }

    /// The keys an app kept: the private key's 32 raw bytes and the auth secret.
    /// - Throws: `SealedPushError.invalidKeys` when either is not what `init()` made.
    public init(privateKeyBytes: [UInt8], auth: [UInt8]) throws(SealedPushError) {
        guard auth.count == 16, let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: privateKeyBytes) else {
            throw .invalidKeys
        }
        privateKey = key
        self.auth = auth
    }

    /// Never prints the keys.
    public var description: String { "SealedPushKeys(…)" }

    /// The private key's 32 raw bytes, for the app to keep.
    public var privateKeyBytes: [UInt8] { Array(privateKey.rawRepresentation) }

    /// `push_keys.p256dh` of a registration: the public key's uncompressed point, base64url
    /// without padding (as a browser's `PushSubscription` gives it).
    public var p256dh: String { Base64URLText.encode(Array(privateKey.publicKey.x963Representation)) }

    /// `push_keys.auth` of a registration: the auth secret, base64url without padding.
    public var authSecret: String { Base64URLText.encode(auth) }

    /// The plaintext of a body sealed to these keys.
    /// - Throws: `SealedPushError.authentication` when it was sealed to other keys or changed
    ///   on the way; `.malformed` when it is not one `aes128gcm` record.
    public func open(_ body: [UInt8]) throws(SealedPushError) -> [UInt8] {
        // Herald writes one record size, 4,096; RFC 8188 leaves it unauthenticated, so any other
        // is a changed body even where it would still decrypt.
        guard body.count > 20, body[16..<20].elementsEqual([0, 0, 0x10, 0]) else { throw .malformed }
        do {
            return try WebPushEncryption.decrypt(body, privateKey: privateKey, auth: auth)
        } catch {
            switch error {
            case .authentication: throw .authentication
            case .malformed, .tooLarge: throw .malformed
            }
        }
    }
}

/// Why sealed keys or a sealed body were refused.
public enum SealedPushError: Error, Hashable, Sendable {
    /// Kept keys that are not a P-256 private key and a 16-byte auth secret.
    case invalidKeys
    /// Not one RFC 8188 `aes128gcm` record.
    case malformed
    /// Sealed to other keys, or changed on the way.
    case authentication
}
