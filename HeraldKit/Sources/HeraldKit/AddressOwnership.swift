import Crypto
public import Foundation

/// Proof that this device holds the keys of its own `addresses`, for a Herald app whose
/// registration policy is `wallet` (Kasia). Each own address is sent as
/// `{"address", "timestamp", "signature"}`: the wallet's Kaspa message signature of
/// ``message(app:deviceToken:timestamp:)``. Herald accepts it for 10 minutes around `timestamp`.
public struct AddressOwnership: Sendable {
    /// Signs `message` with the key of `address`: Kaspa message signing (the official SDK's
    /// `sign_message`), 64 bytes.
    public typealias Sign = @Sendable (_ address: String, _ message: String) async throws -> [UInt8]

    let sign: Sign
    let now: @Sendable () -> Date

    /// Signs with the app's own wallet signer (a key store, a hardware wallet).
    public init(now: @escaping @Sendable () -> Date = { Date() }, sign: @escaping Sign) {
        self.sign = sign
        self.now = now
    }

    /// Signs every own address with `privateKey` (a Kasia wallet's one receive address) through
    /// `signer`: on Apple platforms the app's secp256k1 implementation, as for ``KasiaCipher``.
    public init(privateKey: KasiaPrivateKey, signer: any SchnorrSigner, now: @escaping @Sendable () -> Date = { Date() }) {
        self.init(now: now) { _, message in
            try KaspaMessageSignature.sign(message: message, privateKey: privateKey.bytes, signer: signer)
        }
    }

    #if canImport(CSecp256k1) && !HERALDKIT_APPLE_PATH
    /// Signs every own address with `privateKey` on libsecp256k1 (Linux).
    public init(privateKey: KasiaPrivateKey, now: @escaping @Sendable () -> Date = { Date() }) {
        self.init(privateKey: privateKey, signer: LibSecp256k1(), now: now)
    }
    #endif

    /// What a wallet signs: `herald-register:<app>:<SHA-256 of the device token, hex>:<unix seconds>`,
    /// the token as Herald keeps it (hex tokens in lower case).
    public static func message(app: String, deviceToken: String, timestamp: Int64) -> String {
        "herald-register:\(app):\(tokenHash(deviceToken)):\(timestamp)"
    }

    /// What a wallet signs for a read marker (`HeraldClient.markRead`):
    /// `herald-read:<app>:<SHA-256 of the device token, hex>:<conversation>:<up_to>:<issued_at>`.
    public static func readMessage(app: String, deviceToken: String, conversation: String, upTo: String, issuedAt: Int64) -> String {
        "herald-read:\(app):\(tokenHash(deviceToken)):\(conversation):\(upTo):\(issuedAt)"
    }

    /// The SHA-256 (hex) of the token as Herald keeps it (hex tokens in lower case).
    static func tokenHash(_ deviceToken: String) -> String {
        let isHex = !deviceToken.isEmpty && deviceToken.utf8.allSatisfy { $0 < 128 && Character(UnicodeScalar($0)).isHexDigit }
        let token = isHex ? deviceToken.lowercased() : deviceToken
        return Hex.encode(SHA256.hash(data: Array(token.utf8)))
    }

    /// The wallet's signature (hex) of `message` with the key of `address`.
    func signature(of message: String, by address: String) async throws(HeraldClientError) -> String {
        do {
            return Hex.encode(try await sign(address, message))
        } catch {
            throw .invalidWatchKey(field: "address", value: address, reason: "the wallet did not sign: \(error)")
        }
    }

    /// Now, in whole unix seconds.
    var timestamp: Int64 { Int64(now().timeIntervalSince1970.rounded(.down)) }

    /// The `addresses` array with each address signed for `deviceToken` at `app`.
    func proofs(of addresses: [String], app: String, deviceToken: String) async throws(HeraldClientError) -> [[String: Any]] {
        let timestamp = Int64(now().timeIntervalSince1970.rounded(.down))
        let message = Self.message(app: app, deviceToken: deviceToken, timestamp: timestamp)
        var proofs: [[String: Any]] = []
        for (i, address) in addresses.enumerated() {
            let signature: [UInt8]
            do {
                signature = try await sign(address, message)
            } catch {
                throw .invalidWatchKey(field: "addresses[\(i)]", value: address, reason: "the wallet did not sign: \(error)")
            }
            proofs.append([
                "address": address, "timestamp": timestamp, "signature": Hex.encode(signature),
            ])
        }
        return proofs
    }
}
