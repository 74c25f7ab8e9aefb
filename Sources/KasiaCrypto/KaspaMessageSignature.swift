import KasiaProtocol

#if canImport(CSecp256k1)
import CSecp256k1
#endif

/// Checks BIP340 Schnorr signatures (x-only public keys).
public protocol SchnorrVerifier: Sendable {
    /// Whether `signature` (64 bytes) signs `message32` for the x-only key `publicKey` (32 bytes).
    func verifySchnorr(signature: [UInt8], message32: [UInt8], publicKey: [UInt8]) -> Bool
}

/// Kaspa's personal-message signatures (the official SDK's `sign_message`): BIP340 Schnorr over
/// BLAKE2b-256 of the message's UTF-8 bytes, keyed with `PersonalMessageSigningHash`.
public enum KaspaMessageSignature {
    static let hashKey = Array("PersonalMessageSigningHash".utf8)

    /// The 32-byte hash a personal message is signed over.
    public static func digest(_ message: String) -> [UInt8] {
        Blake2b.hash(Array(message.utf8), key: hashKey, outputLength: 32)
    }

    /// Whether `signature` signs `message` for the owner of `address`. Only Schnorr addresses
    /// (an x-only key) can sign this way; any other address is refused.
    public static func verify(message: String, signature: [UInt8], address: KaspaAddress, verifier: any SchnorrVerifier) -> Bool {
        guard address.version == .publicKey, address.payload.count == 32, signature.count == 64 else { return false }
        return verifier.verifySchnorr(signature: signature, message32: digest(message), publicKey: address.payload)
    }
}

#if canImport(CSecp256k1)
extension LibSecp256k1: SchnorrVerifier {
    public func verifySchnorr(signature: [UInt8], message32: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, message32.count == 32, publicKey.count == 32 else { return false }
        var key = secp256k1_xonly_pubkey()
        guard secp256k1_xonly_pubkey_parse(context, &key, publicKey) == 1 else { return false }
        return secp256k1_schnorrsig_verify(context, signature, message32, 32, &key) == 1
    }
}
#endif
