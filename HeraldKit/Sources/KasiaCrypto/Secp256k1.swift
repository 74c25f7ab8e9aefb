#if canImport(CSecp256k1) && !HERALDKIT_APPLE_PATH
import CSecp256k1
#endif

/// The two secp256k1 operations the Kasia cipher needs. KasiaCrypto brings `LibSecp256k1`
/// (Debian's libsecp256k1) on Linux; an iOS app plugs in its own (P256K, for example).
public protocol Secp256k1Curve: Sendable {
    /// The SEC1 compressed public key (33 bytes) of a 32-byte secret key.
    func publicKey(privateKey: [UInt8]) throws(KasiaCipherError) -> [UInt8]
    /// The raw 32-byte x-coordinate of `privateKey · publicKey` (not a hashed ECDH output);
    /// `publicKey` is SEC1 compressed.
    func sharedX(privateKey: [UInt8], publicKey: [UInt8]) throws(KasiaCipherError) -> [UInt8]
}

#if canImport(CSecp256k1) && !HERALDKIT_APPLE_PATH
/// secp256k1 through libsecp256k1 (one randomized context, safe for concurrent use).
public final class LibSecp256k1: Secp256k1Curve, @unchecked Sendable {
    // Randomized once at creation, then only read: libsecp256k1 allows concurrent use.
    let context: OpaquePointer

    public init() {
        context = secp256k1_context_create(UInt32(1))  // SECP256K1_CONTEXT_NONE
        var seed = [UInt8](repeating: 0, count: 32)
        var rng = SystemRandomNumberGenerator()
        for i in seed.indices { seed[i] = rng.next() }
        _ = secp256k1_context_randomize(context, seed)
    }

    deinit { secp256k1_context_destroy(context) }

    public func publicKey(privateKey: [UInt8]) throws(KasiaCipherError) -> [UInt8] {
        guard privateKey.count == 32 else { throw .invalidPrivateKey }
        var point = secp256k1_pubkey()
        guard secp256k1_ec_pubkey_create(context, &point, privateKey) == 1 else { throw .invalidPrivateKey }
        var out = [UInt8](repeating: 0, count: 33)
        var length = 33
        _ = secp256k1_ec_pubkey_serialize(context, &out, &length, &point, UInt32(258))  // SECP256K1_EC_COMPRESSED
        return out
    }

    public func sharedX(privateKey: [UInt8], publicKey: [UInt8]) throws(KasiaCipherError) -> [UInt8] {
        guard privateKey.count == 32 else { throw .invalidPrivateKey }
        var point = secp256k1_pubkey()
        guard secp256k1_ec_pubkey_parse(context, &point, publicKey, publicKey.count) == 1 else { throw .invalidPublicKey }
        var x = [UInt8](repeating: 0, count: 32)
        // Kasia (k256) uses the bare x-coordinate: the hash function only copies it.
        let copyX: secp256k1_ecdh_hash_function = { output, x32, _, _ in
            guard let output, let x32 else { return 0 }
            output.update(from: x32, count: 32)
            return 1
        }
        guard secp256k1_ecdh(context, &x, &point, privateKey, copyX, nil) == 1 else { throw .invalidPrivateKey }
        return x
    }
}
#endif
