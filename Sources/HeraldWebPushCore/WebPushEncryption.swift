public import Crypto
import Foundation
public import HeraldPushCore
public import WebPushCrypto

/// A push subscription's keys, as a browser's `PushSubscription.toJSON().keys` or a UnifiedPush
/// distributor gives them: the user agent's P-256 public key and its 16-byte auth secret.
public struct WebPushKeys: Sendable, Hashable {
    /// The uncompressed point, 65 bytes (`0x04 ‖ x ‖ y`), checked to be on the curve.
    public let p256dh: [UInt8]
    public let auth: [UInt8]
    /// `p256dh` parsed once, where it is checked, not per message.
    let receiver: P256.KeyAgreement.PublicKey

    /// Parses base64url (no padding, as browsers send it) and checks both keys.
    /// - Throws: `WebPushKeyError` naming the key at fault.
    public init(p256dh: String, auth: String) throws(WebPushKeyError) {
        guard let point = Self.base64URL(p256dh), point.count == 65, point.first == 0x04,
            let receiver = try? P256.KeyAgreement.PublicKey(x963Representation: point)
        else { throw .p256dh }
        guard let secret = Self.base64URL(auth), secret.count == 16 else { throw .auth }
        self.p256dh = point
        self.auth = secret
        self.receiver = receiver
    }

    /// Keys already decoded (tests, the simulator).
    public init(publicKey: P256.KeyAgreement.PublicKey, auth: [UInt8]) {
        p256dh = Array(publicKey.x963Representation)
        self.auth = auth
        receiver = publicKey
    }

    public static func == (lhs: WebPushKeys, rhs: WebPushKeys) -> Bool { lhs.p256dh == rhs.p256dh && lhs.auth == rhs.auth }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(p256dh)
        hasher.combine(auth)
    }

    /// How a store keeps the keys: `<p256dh>.<auth>`, both base64url.
    public var storedForm: String { Base64URL.encode(p256dh) + "." + Base64URL.encode(auth) }

    /// Keys from `storedForm`; nil when it is not one.
    public init?(storedForm: String) {
        let parts = storedForm.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let keys = try? WebPushKeys(p256dh: String(parts[0]), auth: String(parts[1])) else { return nil }
        self = keys
    }

    /// Strict base64url: only its alphabet, no padding, then decoded.
    static func base64URL(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 1_024, text.utf8.allSatisfy(Base64URL.isAlphabet) else { return nil }
        return Base64URL.decode(Substring(text))
    }
}

/// Which subscription key is malformed.
public enum WebPushKeyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Not base64url of a 65-byte uncompressed P-256 point on the curve.
    case p256dh
    /// Not base64url of 16 bytes.
    case auth

    public var description: String {
        switch self {
        case .p256dh: "p256dh is the base64url of a 65-byte uncompressed P-256 public key"
        case .auth: "auth is the base64url of 16 bytes"
        }
    }
}

extension WebPushEncryption {
    /// Encrypts `plaintext` to a subscription's keys (RFC 8291, one record).
    public static func encrypt(
        _ plaintext: [UInt8], to keys: WebPushKeys, ephemeral: P256.KeyAgreement.PrivateKey? = nil, salt: [UInt8]? = nil
    ) throws(WebPushCryptoError) -> [UInt8] {
        try encrypt(plaintext, to: keys.receiver, receiverBytes: keys.p256dh, auth: keys.auth, ephemeral: ephemeral, salt: salt)
    }
}

extension DeviceAttributes {
    /// A Web Push subscription's keys (`web_keys`, as `WebPushKeys.storedForm`).
    public var webPushKeys: WebPushKeys? {
        self["web_keys"].flatMap(WebPushKeys.init(storedForm:))
    }

    /// These attributes with the subscription's keys (removed when nil).
    public func setting(webPushKeys keys: WebPushKeys?) -> DeviceAttributes {
        setting("web_keys", to: keys?.storedForm)
    }
}
