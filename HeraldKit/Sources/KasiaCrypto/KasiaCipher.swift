import Crypto
public import KasiaProtocol

/// Why a box does not open, or a key is unusable. Never a crash.
public enum KasiaCipherError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Not 32 bytes, zero, or not below the curve order.
    case invalidPrivateKey
    /// Not a point on secp256k1.
    case invalidPublicKey
    /// Kasia encrypts only to version-0 (Schnorr, x-only) addresses.
    case notASchnorrAddress
    /// Too short, or no compressed key at offset 12.
    case malformedBox
    /// The tag does not verify: a wrong key, or a tampered or truncated box.
    case authenticationFailed
    /// The plaintext is not UTF-8.
    case notUTF8

    public var description: String {
        switch self {
        case .invalidPrivateKey: "not a secp256k1 private key"
        case .invalidPublicKey: "not a secp256k1 public key"
        case .notASchnorrAddress: "Kasia encrypts only to Schnorr (version 0) addresses"
        case .malformedBox: "not a sealed Kasia box"
        case .authenticationFailed: "the box does not open with this key (wrong key, or tampered)"
        case .notUTF8: "the plaintext is not UTF-8"
        }
    }
}

/// A wallet's secret key (Kasia uses receive key #0 for everything).
public struct KasiaPrivateKey: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Takes 32 bytes; the curve checks them when the key is used.
    public init(bytes: [UInt8]) throws(KasiaCipherError) {
        guard bytes.count == 32, bytes.contains(where: { $0 != 0 }) else { throw .invalidPrivateKey }
        self.bytes = bytes
    }

    public init(hex: String) throws(KasiaCipherError) {
        guard let bytes = Hex.decode(hex) else { throw .invalidPrivateKey }
        try self.init(bytes: bytes)
    }

    /// Never prints the key.
    public var description: String { "KasiaPrivateKey(…)" }
}

/// The Kasia message cipher, byte-compatible with Kasia's `cipher/src/lib.rs`
/// (Kasia's sealed box): ECDH x-coordinate → HKDF-SHA256 (no salt, no info)
/// → ChaCha20-Poly1305 (no AAD); nonce(12) ‖ ephemeral key(33) ‖ ciphertext ‖ tag(16).
public struct KasiaCipher: Sendable {
    public let curve: any Secp256k1Curve

    public init(curve: any Secp256k1Curve) {
        self.curve = curve
    }

    #if canImport(CSecp256k1) && !HERALDKIT_APPLE_PATH
    /// A cipher on libsecp256k1.
    public init() {
        self.init(curve: LibSecp256k1())
    }
    #endif

    /// Opens a sealed box with the recipient's key; the plaintext must be UTF-8.
    public func decrypt(_ sealed: [UInt8], with key: KasiaPrivateKey) throws(KasiaCipherError) -> String {
        let bytes = try open(sealed, with: key)
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .notUTF8 }
        return text
    }

    /// Opens a sealed box to its raw bytes.
    public func open(_ sealed: [UInt8], with key: KasiaPrivateKey) throws(KasiaCipherError) -> [UInt8] {
        guard let box = KasiaSealedBox(sealed) else { throw .malformedBox }
        let shared = try curve.sharedX(privateKey: key.bytes, publicKey: box.ephemeralPublicKey)
        do {
            let sealedBox = try ChaChaPoly.SealedBox(nonce: ChaChaPoly.Nonce(data: box.nonce), ciphertext: box.ciphertext, tag: box.tag)
            return Array(try ChaChaPoly.open(sealedBox, using: Self.symmetricKey(sharedX: shared)))
        } catch {
            throw .authenticationFailed
        }
    }

    /// Seals a message to an address with a fresh ephemeral key and nonce.
    public func encrypt(_ plaintext: String, to address: KaspaAddress) throws(KasiaCipherError) -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        let nonce = (0..<KasiaSealedBox.nonceLength).map { _ in UInt8.random(in: 0...255, using: &rng) }
        return try encrypt(plaintext, to: address, ephemeralKey: randomPrivateKey(), nonce: nonce)
    }

    /// Seals with a given ephemeral key and nonce: for test vectors only (reusing either breaks the cipher).
    public func encrypt(
        _ plaintext: String, to address: KaspaAddress, ephemeralKey: KasiaPrivateKey, nonce: [UInt8]
    ) throws(KasiaCipherError) -> [UInt8] {
        guard address.version == .publicKey else { throw .notASchnorrAddress }
        guard nonce.count == KasiaSealedBox.nonceLength else { throw .malformedBox }
        // Lifted with even Y, as Kasia's cipher does; x(k·P) is the same for either parity.
        let recipient = [UInt8(2)] + address.payload
        let shared = try curve.sharedX(privateKey: ephemeralKey.bytes, publicKey: recipient)
        let ephemeralPublic = try curve.publicKey(privateKey: ephemeralKey.bytes)
        do {
            let box = try ChaChaPoly.seal(
                Array(plaintext.utf8), using: Self.symmetricKey(sharedX: shared), nonce: ChaChaPoly.Nonce(data: nonce))
            return KasiaSealedBox(nonce: nonce, ephemeralPublicKey: ephemeralPublic, ciphertext: Array(box.ciphertext), tag: Array(box.tag)).bytes
        } catch {
            throw .malformedBox
        }
    }

    /// A fresh secret key the curve accepts.
    public func randomPrivateKey() throws(KasiaCipherError) -> KasiaPrivateKey {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<8 {
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if let key = try? KasiaPrivateKey(bytes: bytes), (try? curve.publicKey(privateKey: bytes)) != nil { return key }
        }
        throw .invalidPrivateKey
    }

    /// The Schnorr (version 0) address of a key: its x-only public key.
    public func address(of key: KasiaPrivateKey, prefix: KaspaAddress.Prefix = .mainnet) throws(KasiaCipherError) -> KaspaAddress {
        let publicKey = try curve.publicKey(privateKey: key.bytes)
        do {
            return try KaspaAddress(prefix: prefix, version: .publicKey, payload: Array(publicKey.dropFirst()))
        } catch {
            throw .invalidPublicKey
        }
    }

    static func symmetricKey(sharedX: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: sharedX), salt: [UInt8](), info: [UInt8](), outputByteCount: 32)
    }
}
