import Foundation
import HeraldKit
import KasiaCrypto
import KasiaProtocol
import Testing

/// Kaspa's personal-message signatures, checked against values the official SDK and Python's
/// `hashlib` produced (`kaspa.sign_message(message, PrivateKey("11"*32), no_aux_rand=True)`).
@Suite("Kaspa message signatures")
struct MessageSignatureTests {
    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var i = text.startIndex
        while i < text.endIndex {
            let j = text.index(i, offsetBy: 2)
            bytes.append(UInt8(text[i..<j], radix: 16)!)
            i = j
        }
        return bytes
    }

    @Test("BLAKE2b matches hashlib, keyed and not, across block boundaries", arguments: [
        ("", "", "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8"),
        ("abc", "", "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319"),
        ("abc", "PersonalMessageSigningHash", "895950e2e598933221227ec9561d6f2159440eeb88c4ca570328d4ec6f029719"),
        (String(repeating: "a", count: 128), "", "ae2aa48507885c4c950fb809b2076f959cde9f8ea6da260d9a3587df33dac450"),
        (String(repeating: "a", count: 128), "PersonalMessageSigningHash", "d2b327a5b07ec21470def956217cacdc477bcd9efbc400f8c90713a49637cdf0"),
        (String(repeating: "b", count: 129), "k", "8997015a8328780c96fe779d8eeea427e0843a67f0e2ebe6171ac2ed94740b5a"),
        (String(repeating: "x", count: 300), "PersonalMessageSigningHash", "26c494a679e4e81df882a01ada50ef394594a70e949ae5ad2d174220c0eb2bbc"),
    ])
    func blake2b(message: String, key: String, expected: String) {
        #expect(Blake2b.hash(Array(message.utf8), key: Array(key.utf8), outputLength: 32) == Self.hex(expected))
    }

    @Test("BLAKE2b-512 of abc is RFC 7693's vector")
    func rfcVector() {
        let expected = "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923"
        #expect(Blake2b.hash(Array("abc".utf8), outputLength: 64) == Self.hex(expected))
    }

    #if canImport(CSecp256k1)
    @Test("signing without auxiliary randomness reproduces the SDK's signature byte for byte; with it, the signature still verifies")
    func signLikeTheSDK() throws {
        let message = "herald-register:default:abcd:1700000000"
        let key = [UInt8](repeating: 0x11, count: 32)
        let curve = LibSecp256k1()
        let sdk = Self.hex(
            "510c58ce0a0cad9b6b29d0140f47adb3856d20aa92e6d443e5109ac8cb7641e7d9f617dafe9eec03d404a5846a799f39ee918f2bf06be55ff50734ae387f5cfe")
        #expect(try KaspaMessageSignature.sign(message: message, privateKey: key, signer: curve, deterministic: true) == sdk)
        let randomized = try KaspaMessageSignature.sign(message: message, privateKey: key, signer: curve)
        #expect(randomized != sdk)
        let address = try KaspaAddress("kaspa:qp8n2k7uklxq4aegau7vawtptkgxsja4kt99lpv6krctwpq8tpc6547zhh9u4")
        #expect(KaspaMessageSignature.verify(message: message, signature: randomized, address: address, verifier: curve))
        #expect(throws: KasiaCipherError.invalidPrivateKey) {
            try KaspaMessageSignature.sign(message: message, privateKey: [UInt8](repeating: 0, count: 32), signer: curve)
        }
    }

    @Test("the official SDK's verify_message accepts a signature HeraldKit made")
    func sdkVerifiesOurs() throws {
        let curve = LibSecp256k1()
        let key = (0..<32).map { _ in UInt8.random(in: 1...255) }
        let message = AddressOwnership.message(app: "kasia", deviceToken: String(repeating: "AB", count: 32), timestamp: 1_800_000_000)
        let signature = try KaspaMessageSignature.sign(message: message, privateKey: key, signer: curve)
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        let script = """
            import kaspa, os, sys
            key = kaspa.PrivateKey(sys.argv[1])
            print(kaspa.verify_message(sys.argv[2], sys.argv[3], key.to_public_key()), flush=True)
            print(kaspa.verify_message(sys.argv[2] + "x", sys.argv[3], key.to_public_key()), flush=True)
            os._exit(0)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, hex(key), message, hex(signature)]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(text.split(separator: "\n") == ["True", "False"], "pip install kaspa: \(text)")
        // The message names the token's SHA-256 in lower-case hex, taken of the lower-case token.
        #expect(message == AddressOwnership.message(app: "kasia", deviceToken: String(repeating: "ab", count: 32), timestamp: 1_800_000_000))
        #expect(message.hasPrefix("herald-register:kasia:") && message.hasSuffix(":1800000000"))
    }

    @Test("the SDK's signature verifies for its address, and for nothing else")
    func sdkSignature() throws {
        let message = "herald-register:default:abcd:1700000000"
        let signature = Self.hex(
            "510c58ce0a0cad9b6b29d0140f47adb3856d20aa92e6d443e5109ac8cb7641e7d9f617dafe9eec03d404a5846a799f39ee918f2bf06be55ff50734ae387f5cfe")
        let address = try KaspaAddress("kaspa:qp8n2k7uklxq4aegau7vawtptkgxsja4kt99lpv6krctwpq8tpc6547zhh9u4")
        let curve = LibSecp256k1()
        #expect(KaspaMessageSignature.verify(message: message, signature: signature, address: address, verifier: curve))
        #expect(!KaspaMessageSignature.verify(message: message + "1", signature: signature, address: address, verifier: curve))
        var tampered = signature
        tampered[5] ^= 1
        #expect(!KaspaMessageSignature.verify(message: message, signature: tampered, address: address, verifier: curve))
        let other = try KaspaAddress(prefix: .mainnet, version: .publicKey, payload: [UInt8](repeating: 2, count: 32))
        #expect(!KaspaMessageSignature.verify(message: message, signature: signature, address: other, verifier: curve))
    }
    #endif
}
