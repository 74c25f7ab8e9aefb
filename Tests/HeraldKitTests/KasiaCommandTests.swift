import Foundation
import HeraldKit
import HeraldTestSupport
import Testing

/// The `kasia` command as a user runs it.
@Suite struct KasiaCommandTests {
    struct Run {
        var status: Int32
        var stdout: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(stdout.utf8))) as? [String: Any] ?? [:] }
    }

    func kasia(_ arguments: [String]) throws -> Run {
        let output = try runProcess(try builtExecutable("kasia"), arguments)
        return Run(status: output.status, stdout: String(decoding: output.stdout, as: UTF8.self).trimmingCharacters(in: .newlines))
    }

    @Test func decodesTheReferenceVectors() throws {
        for v in try Fixtures.vectors() {
            let opened = try kasia(["decode", "--payload", v.tx_payload_hex, "--private-key", v.receiver_private_key])
            #expect(opened.status == 0, "\(v.name)")
            #expect(opened.json["plaintext"] as? String == v.plaintext, "\(v.name)")
            #expect(opened.json["sealed_length"] as? Int == v.sealed_hex.count / 2, "\(v.name)")
            #expect(!opened.stdout.contains("\n"), "one line")
            // Without a key: the structure only.
            let bare = try kasia(["decode", "--payload", v.tx_payload_hex])
            #expect(bare.status == 0 && bare.json["plaintext"] == nil)
        }
        let comm = try kasia(["decode", "--payload", try Fixtures.vectors()[0].tx_payload_hex])
        #expect(comm.json["type"] as? String == "contextual_message" && comm.json["alias"] as? String == "a1b2c3d4e5f6")
    }

    @Test func aKeyThatDoesNotOpenExitsOne() throws {
        let v = try Fixtures.vectors()[1]
        let wrong = try kasia(["decode", "--payload", v.tx_payload_hex, "--private-key", String(repeating: "11", count: 32)])
        #expect(wrong.status == 1)
        #expect(wrong.json["type"] as? String == "handshake" && wrong.json["plaintext"] == nil)
        #expect(try kasia(["decode", "--payload", "68656c6c6f"]).status == 2)
    }

    @Test func encryptThenDecrypt() throws {
        let cipher = KasiaCipher()
        let key = try cipher.randomPrivateKey()
        let address = try cipher.address(of: key, prefix: .testnet)
        for type in ["message", "handshake", "payment"] {
            let sealed = try kasia(["encrypt", "--to", address.string, "--text", "héllo ☕", "--type", type, "--alias", "00ff00ff00ff"])
            #expect(sealed.status == 0)
            let opened = try kasia(["decode", "--payload", sealed.stdout, "--private-key", Hex.encode(key.bytes)])
            #expect(opened.json["plaintext"] as? String == "héllo ☕", "\(type)")
            #expect(opened.json["type"] as? String == (type == "message" ? "contextual_message" : type))
        }
        #expect(try kasia(["encrypt", "--to", "kaspa:nope", "--text", "x"]).status == 2)
    }

    /// `kasia keygen`: a key and the address the official Kaspa SDK derives from it; a message
    /// sealed to that address opens with that key.
    @Test(arguments: [("mainnet", "kaspa:"), ("testnet", "kaspatest:")])
    func keygenMakesAKeyAndItsAddress(network: String, prefix: String) throws {
        let made = try kasia(["keygen", "--network", network])
        #expect(made.status == 0)
        let key = try #require(made.json["private_key"] as? String)
        let address = try #require(made.json["address"] as? String)
        #expect(key.count == 64 && address.hasPrefix(prefix), "\(made.stdout)")
        let sdk = try runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", "-c", "import sys; from kaspa import PrivateKey; print(PrivateKey(sys.argv[1]).to_address(sys.argv[2]).to_string())", key, network])
        #expect(sdk.status == 0, "\(String(decoding: sdk.stderr, as: UTF8.self))")
        #expect(String(decoding: sdk.stdout, as: UTF8.self).trimmingCharacters(in: .newlines) == address)
        let payload = try kasia(["encrypt", "--to", address, "--text", "hello from kasia", "--alias", "a1b2c3d4e5f6"]).stdout
        let opened = try kasia(["decode", "--payload", payload, "--private-key", key])
        #expect(opened.json["plaintext"] as? String == "hello from kasia")
        // Two keys are never the same.
        #expect(try kasia(["keygen"]).json["private_key"] as? String != key)
        // --shell: lines a shell's eval takes.
        let shell = try kasia(["keygen", "--shell"]).stdout.split(separator: "\n")
        #expect(shell.count == 2 && shell[0].hasPrefix("KASIA_PRIVATE_KEY=") && shell[1].hasPrefix("KASIA_ADDRESS=kaspa:"))
    }
}
