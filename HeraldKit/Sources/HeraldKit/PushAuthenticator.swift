public import Crypto
public import Foundation
import PushSigning

/// Opens and checks Herald's pushes before anything is shown (docs/signed-pushes.md): a sealed
/// push is decrypted with the device's `SealedPushKeys`, every push's signature is checked
/// against the app's pinned key, and its issue time against a window. What fails is never shown
/// as a contact's message: the extension shows the app's generic text, and the reason goes to
/// the reliability tracker (`PushReliabilityTracker.rejected(_:)`).
public struct PushAuthenticator: Sendable {
    /// The app's signing key: shipped in the app, or pinned at the first registration.
    public let signingKey: Curve25519.Signing.PublicKey
    /// The device's keys for sealed pushes (nil: the device registered none).
    public let keys: SealedPushKeys?
    /// How old a push may be, in seconds (a day: Herald's default lifetime of a push).
    public var window: TimeInterval = 86_400
    /// How far ahead of this device's clock a push's issue time may be.
    public var allowedSkew: TimeInterval = 300
    public let clock: any WallClock

    /// - Parameters:
    ///   - pinnedKey: the app's public key as `GET /v1/push/signing-key` and registration answers
    ///     give it (32 bytes, base64url).
    ///   - keys: the device's keys for sealed pushes, or nil when it registered none.
    ///   - clock: where the issue time's window is read.
    /// - Throws: `PushRejection.malformed` when it is not an Ed25519 public key.
    public init(pinnedKey: String, keys: SealedPushKeys?, clock: any WallClock = SystemWallClock()) throws(PushRejection) {
        guard let raw = Base64URLText.decode(pinnedKey), raw.count == 32,
            let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw)
        else { throw .malformed }
        signingKey = key
        self.keys = keys
        self.clock = clock
    }

    /// The member of a sealed push holding its ciphertext (APNs payload, FCM data).
    public static let sealedMember = "herald_sealed"

    /// The verified document of an APNs push as the extension receives it (`userInfo`). Only a
    /// sealed push can be checked here: an unsealed one arrives parsed, without its exact bytes.
    public func document(userInfo: [AnyHashable: Any]) throws(PushRejection) -> [UInt8] {
        guard let sealed = userInfo[Self.sealedMember] as? String else { throw .notSealed }
        return try document(sealed: sealed)
    }

    /// The verified document of an FCM data message.
    public func document(fcmData: [String: String]) throws(PushRejection) -> [UInt8] {
        guard let sealed = fcmData[Self.sealedMember] else { throw .notSealed }
        return try document(sealed: sealed)
    }

    /// The verified document of a push as received, byte for byte: a sealed APNs payload, or an
    /// unsealed one (a Web Push body, an APNs payload) with its attached signature.
    public func document(payload: [UInt8]) throws(PushRejection) -> [UInt8] {
        if let object = try? JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any], let sealed = object[Self.sealedMember] as? String {
            return try document(sealed: sealed)
        }
        let signed: SignedPush
        do { signed = try SignedPush(attached: payload) } catch { throw PushRejection(error) }
        return try verified(signed)
    }

    /// The verified document of a sealed body (base64url), opened with the device's keys.
    public func document(sealed text: String) throws(PushRejection) -> [UInt8] {
        guard let keys else { throw .noKeys }
        guard let body = Base64URLText.decode(text) else { throw .malformed }
        let plaintext: [UInt8]
        do { plaintext = try keys.open(body) } catch { throw error == .authentication ? .notForThisDevice : .malformed }
        let signed: SignedPush
        do { signed = try SignedPush(envelope: plaintext) } catch { throw PushRejection(error) }
        return try verified(signed)
    }

    private func verified(_ signed: SignedPush) throws(PushRejection) -> [UInt8] {
        let now = clock.now.timeIntervalSince1970
        do {
            try signed.verify(
                publicKey: signingKey, now: Int64(now.rounded(.down)), window: Int64(window), allowedSkew: Int64(allowedSkew))
        } catch { throw PushRejection(error) }
        return signed.document
    }
}

/// Why a push was not shown as it came (the reliability tracker counts each).
public enum PushRejection: String, Error, Hashable, Sendable, CaseIterable {
    /// Carries no signature, or no sealed body where one was needed.
    case unsigned
    /// An unsealed APNs push: the extension cannot check it.
    case notSealed
    /// Sealed, but the device has no keys.
    case noKeys
    /// Sealed to other keys, or its ciphertext changed on the way.
    case notForThisDevice
    /// Not in the form Herald writes.
    case malformed
    /// The signature does not verify with the pinned key: changed, or signed with another key.
    case badSignature
    /// Issued longer ago than the window (a replay, or held too long).
    case stale
    /// Issued further ahead than the allowed skew.
    case fromTheFuture
    /// A Kasia push whose sender proof does not hold: the transaction was not signed by the
    /// sender the push names (`KaspaTransactionProof`).
    case senderNotProven

    init(_ error: SignedPushError) {
        self = switch error {
        case .unsigned: .unsigned
        case .malformed: .malformed
        case .badSignature: .badSignature
        case .stale: .stale
        case .fromTheFuture: .fromTheFuture
        }
    }
}
