import Foundation
import HeraldCore
import KasiaProtocol
import Testing

@Suite("Kaspa addresses")
struct KaspaAddressTests {
    /// The vectors of kasia-protocol.md §6 (rusty-kaspa addresses lib.rs).
    static let zeroV0 = "kaspa:qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqkx9awp4e"
    static let realV0 = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"
    static let zeroV1Test = "kaspatest:qyqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqhe837j2d"

    @Test("the reference vectors decode and re-encode")
    func vectors() throws {
        let a = try KaspaAddress(Self.zeroV0)
        #expect(a.prefix == .mainnet && a.version == .publicKey && a.payload == [UInt8](repeating: 0, count: 32))
        #expect(try KaspaAddress(prefix: .mainnet, version: .publicKey, payload: a.payload).string == Self.zeroV0)

        let b = try KaspaAddress(Self.realV0)
        #expect(b.version == .publicKey && b.payload.count == 32)
        // The full payload from kasia_cipher_ref.py (the protocol document abbreviates it, with a typo: "…5922").
        let hex = "5fff3c4da18f45adcdd499e44611e9fff148ba69db3c4ea2ddd955fc46a59522"
        #expect(b.payload == stride(from: 0, to: hex.count, by: 2).map {
            UInt8(hex.dropFirst($0).prefix(2), radix: 16)!
        })
        #expect(try KaspaAddress(prefix: .mainnet, version: .publicKey, payload: b.payload).string == Self.realV0)

        let c = try KaspaAddress(Self.zeroV1Test)
        #expect(c.prefix == .testnet && c.version == .publicKeyECDSA && c.payload == [UInt8](repeating: 0, count: 33))
        #expect(try KaspaAddress(prefix: .testnet, version: .publicKeyECDSA, payload: c.payload).string == Self.zeroV1Test)
    }

    @Test("random payloads round-trip on every network")
    func roundTrip() throws {
        var rng = SystemRandomNumberGenerator()
        for prefix in KaspaAddress.Prefix.allCases {
            for _ in 0..<50 {
                let payload = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
                let encoded = try KaspaAddress(prefix: prefix, version: .publicKey, payload: payload)
                #expect(try KaspaAddress(encoded.string) == encoded)
            }
        }
    }

    @Test("every single-character change is caught")
    func corruption() {
        let text = Array(Self.realV0)
        let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l")
        for i in text.indices.dropFirst("kaspa:".count) {
            for replacement in alphabet where replacement != text[i] {
                var mutated = text
                mutated[i] = replacement
                #expect(throws: KaspaAddressError.self) { try KaspaAddress(String(mutated)) }
            }
        }
    }

    @Test("malformed addresses name their fault", arguments: [
        ("qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj", KaspaAddressError.missingPrefix),
        ("bitcoin:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj", .unknownPrefix),
        ("kaspa:QP0L70ZD5X85TTWD6JV7G3S3A8LLZJ96D8DNCN4ZMHV4TLZX5K2JYQH70XMFJ", .invalidCharacter),
        ("kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfq", .badChecksum),
        ("kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfb", .invalidCharacter),
        ("kaspa:qqqq", .tooShort),
        ("kaspatest:qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqkx9awp4e", .badChecksum),
    ])
    func malformed(text: String, error: KaspaAddressError) {
        #expect(throws: error) { try KaspaAddress(text) }
    }

    @Test("a payload of the wrong length for its version is refused")
    func wrongLength() {
        #expect(throws: KaspaAddressError.wrongLength) {
            try KaspaAddress(prefix: .mainnet, version: .publicKey, payload: [UInt8](repeating: 1, count: 33))
        }
    }
}

@Suite("Watch keys")
struct WatchKeyTests {
    @Test("typed keys parse to their canonical form", arguments: [
        (KaspaAddressTests.realV0, KaspaAddressTests.realV0),
        ("conv:9f86d081884c7d659a2feaa0c55ad015", "conv:9f86d081884c7d659a2feaa0c55ad015"),
        ("session:05ABC123DEF456", "session:05ABC123DEF456"),
        ("user:alice@example.com", "user:alice@example.com"),
    ])
    func parses(text: String, canonical: String) throws {
        #expect(try WatchKey(text).description == canonical)
    }

    @Test("bad keys are refused", arguments: [
        "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfb",
        "conv:", "session:has space", "user:" + String(repeating: "x", count: 257), "nokind", "group:abc", "",
    ])
    func refused(text: String) {
        #expect(throws: WatchKeyError.self) { try WatchKey(text) }
    }
}
