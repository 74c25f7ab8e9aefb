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
