import Foundation
import HeraldKit
import HeraldTestSupport
import KasiaProtocol
import Testing

/// Files beside this test target (the reference cipher, its vectors, the interop script).
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    struct Vector: Decodable {
        var name: String
        var receiver_private_key: String
        var receiver_address_mainnet: String
        var ephemeral_private_key: String
        var nonce: String
        var plaintext: String
        var sealed_hex: String
        var tx_payload_hex: String
    }

    static func vectors() throws -> [Vector] {
        struct File: Decodable { var vectors: [Vector] }
        return try JSONDecoder().decode(File.self, from: Data(contentsOf: directory.appendingPathComponent("vectors.json"))).vectors
    }

    /// Runs `python3 kasia_interop.py args…` with `input` on stdin; fails the test when it fails.
    static func python(_ arguments: [String], input: Data = Data()) throws -> Data {
        let output = try runProcess(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", directory.appendingPathComponent("kasia_interop.py").path] + arguments, input: input)
        guard output.status == 0 else {
            throw PythonFailed(message: String(decoding: output.stderr, as: UTF8.self) + " (needs: pip install coincurve cryptography)")
        }
        return output.stdout
    }

    struct PythonFailed: Error, CustomStringConvertible { var message: String; var description: String { message } }
}

@Suite struct KasiaCipherTests {
    let cipher = KasiaCipher()

    @Test func opensTheReferenceVectors() throws {
        let vectors = try Fixtures.vectors()
        #expect(vectors.count == 3)
        for v in vectors {
            let key = try KasiaPrivateKey(hex: v.receiver_private_key)
            #expect(try cipher.decrypt(Hex.decode(v.sealed_hex)!, with: key) == v.plaintext, "\(v.name)")
            // The whole transaction payload parses, and its box is the vector's.
            let payload = try #require(KasiaPayload(hex: v.tx_payload_hex))
            #expect(payload.sealed == Hex.decode(v.sealed_hex), "\(v.name)")
            #expect(try cipher.address(of: key).string == v.receiver_address_mainnet)
        }
    }

    @Test func sealsTheReferenceVectorsByteForByte() throws {
        for v in try Fixtures.vectors() {
            let sealed = try cipher.encrypt(
                v.plaintext, to: KaspaAddress(v.receiver_address_mainnet),
                ephemeralKey: KasiaPrivateKey(hex: v.ephemeral_private_key), nonce: Hex.decode(v.nonce)!)
            #expect(Hex.encode(sealed) == v.sealed_hex, "\(v.name)")
        }
    }

    @Test func opensAThousandBoxesSealedByTheReference() throws {
        struct Made: Decodable {
            struct Box: Decodable { var private_key: String; var plaintext: String; var sealed_hex: String }
            var boxes: [Box]
        }
        let made = try JSONDecoder().decode(Made.self, from: Fixtures.python(["make", "1000"]))
        #expect(made.boxes.count == 1000)
        var opened = 0
        for box in made.boxes where (try? cipher.decrypt(Hex.decode(box.sealed_hex)!, with: KasiaPrivateKey(hex: box.private_key))) == box.plaintext {
            opened += 1
        }
        #expect(opened == 1000)
    }

    @Test func theReferenceOpensAThousandBoxesSealedByHeraldKit() throws {
        struct Box: Codable { var private_key: String; var sealed_hex: String }
        struct Request: Codable { var boxes: [Box] }
        struct Answer: Decodable { var plaintexts: [String?] }
        var boxes: [Box] = []
        var texts: [String] = []
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz ABC0123456789.,!?é☕🙂日本")
        for i in 0..<1000 {
            let key = try cipher.randomPrivateKey()
            let text = String((0..<Int.random(in: 0...300)).map { _ in alphabet.randomElement()! })
            let address = try cipher.address(of: key, prefix: i % 2 == 0 ? .mainnet : .testnet)
            boxes.append(Box(private_key: Hex.encode(key.bytes), sealed_hex: Hex.encode(try cipher.encrypt(text, to: address))))
            texts.append(text)
        }
        let answer = try JSONDecoder().decode(
            Answer.self, from: Fixtures.python(["open"], input: JSONEncoder().encode(Request(boxes: boxes))))
        #expect(answer.plaintexts.count == 1000)
        #expect(zip(answer.plaintexts, texts).filter { $0 == $1 }.count == 1000)
    }

    @Test func wrongKeysAndDamagedBoxesAreTypedErrors() throws {
        let v = try Fixtures.vectors()[0]
        let sealed = Hex.decode(v.sealed_hex)!
        let key = try KasiaPrivateKey(hex: v.receiver_private_key)
        let other = try cipher.randomPrivateKey()
        #expect(throws: KasiaCipherError.authenticationFailed) { try cipher.decrypt(sealed, with: other) }
        var tampered = sealed
        tampered[50] ^= 0x01
        #expect(throws: KasiaCipherError.authenticationFailed) { try cipher.decrypt(tampered, with: key) }
        var badTag = sealed
        badTag[badTag.count - 1] ^= 0x80
        #expect(throws: KasiaCipherError.authenticationFailed) { try cipher.decrypt(badTag, with: key) }
        // Truncated anywhere: short of a box, or the tag cut.
        for length in [0, 1, 12, 44, 45, 60] {
            #expect(throws: KasiaCipherError.malformedBox) { try cipher.decrypt(Array(sealed.prefix(length)), with: key) }
        }
        #expect(throws: KasiaCipherError.authenticationFailed) { try cipher.decrypt(Array(sealed.dropLast()), with: key) }
        // A key byte that is not a curve point.
        var offCurve = sealed
        offCurve.replaceSubrange(13..<45, with: [UInt8](repeating: 0xff, count: 32))
        #expect(throws: KasiaCipherError.invalidPublicKey) { try cipher.decrypt(offCurve, with: key) }
        // Keys: the curve order and beyond are not keys; an all-zero key is refused up front.
        #expect(throws: KasiaCipherError.invalidPrivateKey) { try KasiaPrivateKey(bytes: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: KasiaCipherError.invalidPrivateKey) { try KasiaPrivateKey(hex: "abcd") }
        let order = try KasiaPrivateKey(hex: "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141")
        #expect(throws: KasiaCipherError.invalidPrivateKey) { try cipher.decrypt(sealed, with: order) }
        // Not a Schnorr address.
        let ecdsa = try KaspaAddress("kaspatest:qyqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqhe837j2d")
        #expect(throws: KasiaCipherError.notASchnorrAddress) { try cipher.encrypt("x", to: ecdsa) }
    }

    @Test func oddParityReceiversOpenTheirBoxes() throws {
        var found = 0
        while found < 5 {
            let key = try cipher.randomPrivateKey()
            guard try LibSecp256k1().publicKey(privateKey: key.bytes)[0] == 3 else { continue }
            let sealed = try cipher.encrypt("parity", to: cipher.address(of: key))
            #expect(try cipher.decrypt(sealed, with: key) == "parity")
            found += 1
        }
    }
}
