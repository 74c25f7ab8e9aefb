public import KasiaProtocol

#if canImport(CSecp256k1) && !HERALDKIT_APPLE_PATH
import CSecp256k1
#endif

/// Checks BIP340 Schnorr signatures (x-only public keys).
public protocol SchnorrVerifier: Sendable {
    /// Whether `signature` (64 bytes) signs `message32` for the x-only key `publicKey` (32 bytes).
    func verifySchnorr(signature: [UInt8], message32: [UInt8], publicKey: [UInt8]) -> Bool
}

/// Makes BIP340 Schnorr signatures.
public protocol SchnorrSigner: Sendable {
    /// The 64-byte signature of `message32` with `privateKey` (32 bytes). `auxiliaryRandom`
    /// (32 bytes) hardens the nonce against side channels; nil signs deterministically.
    func signSchnorr(message32: [UInt8], privateKey: [UInt8], auxiliaryRandom: [UInt8]?) throws(KasiaCipherError) -> [UInt8]
}

/// Kaspa's personal-message signatures (the official SDK's `sign_message`): BIP340 Schnorr over
/// BLAKE2b-256 of the message's UTF-8 bytes, keyed with `PersonalMessageSigningHash`.
public enum KaspaMessageSignature {
    static let hashKey = Array("PersonalMessageSigningHash".utf8)

    /// The 32-byte hash a personal message is signed over.
    public static func digest(_ message: String) -> [UInt8] {
        Blake2b.hash(Array(message.utf8), key: hashKey, outputLength: 32)
    }

    /// Signs `message` as the official SDK's `sign_message` does; the signature verifies for the
    /// Schnorr address of `privateKey`. Fresh auxiliary randomness each time unless `deterministic`
    /// (the SDK's `no_aux_rand`).
    public static func sign(
        message: String, privateKey: [UInt8], signer: any SchnorrSigner, deterministic: Bool = false
    ) throws(KasiaCipherError) -> [UInt8] {
        var auxiliary: [UInt8]?
        if !deterministic {
            var rng = SystemRandomNumberGenerator()
            auxiliary = (0..<32).map { _ in rng.next() }
        }
        return try signer.signSchnorr(message32: digest(message), privateKey: privateKey, auxiliaryRandom: auxiliary)
    }

    /// Whether `signature` signs `message` for the owner of `address`. Only Schnorr addresses
    /// (an x-only key) can sign this way; any other address is refused.
    public static func verify(message: String, signature: [UInt8], address: KaspaAddress, verifier: any SchnorrVerifier) -> Bool {
        guard address.version == .publicKey, address.payload.count == 32, signature.count == 64 else { return false }
        return verifier.verifySchnorr(signature: signature, message32: digest(message), publicKey: address.payload)
    }
}

#if canImport(CSecp256k1) && !HERALDKIT_APPLE_PATH
extension LibSecp256k1: SchnorrVerifier {
    public func verifySchnorr(signature: [UInt8], message32: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, message32.count == 32, publicKey.count == 32 else { return false }
        var key = secp256k1_xonly_pubkey()
        guard secp256k1_xonly_pubkey_parse(context, &key, publicKey) == 1 else { return false }
        return secp256k1_schnorrsig_verify(context, signature, message32, 32, &key) == 1
    }
}

extension LibSecp256k1: SchnorrSigner {
    public func signSchnorr(message32: [UInt8], privateKey: [UInt8], auxiliaryRandom: [UInt8]?) throws(KasiaCipherError) -> [UInt8] {
        guard privateKey.count == 32, message32.count == 32 else { throw .invalidPrivateKey }
        var keypair = secp256k1_keypair()
        guard secp256k1_keypair_create(context, &keypair, privateKey) == 1 else { throw .invalidPrivateKey }
        var signature = [UInt8](repeating: 0, count: 64)
        let signed: Int32
        if let auxiliaryRandom, auxiliaryRandom.count == 32 {
            signed = secp256k1_schnorrsig_sign32(context, &signature, message32, &keypair, auxiliaryRandom)
        } else {
            signed = secp256k1_schnorrsig_sign32(context, &signature, message32, &keypair, nil)
        }
        guard signed == 1 else { throw .invalidPrivateKey }
        return signature
    }
}
#endif
