import Foundation
import KasiaCrypto
import KasiaProtocol
import Testing

/// The Kasia sender proven on the phone: transactions built and signed with the official `kaspa`
/// SDK (`Tests/HeraldKaspaTests/Fixtures`, made by `make_fixtures.py` and
/// `make_forged_fixture.py`), checked by Kaspa's signature hash and BIP340, trusting no gateway.
@Suite("Kasia sender proofs: Kaspa's signature hash, checked against SDK-signed transactions")
struct KaspaTransactionProofTests {
    /// A fixture file of `HeraldKaspaTests`: its funding transaction and its cases, by name.
    struct Fixture {
        let addresses: [String: String]
        let funding: [String: Any]
        let cases: [String: [String: Any]]

        init(_ file: String) throws {
            let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                .appendingPathComponent("../HeraldKaspaTests/Fixtures/" + file).standardizedFileURL
            let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
            addresses = try #require(object["addresses"] as? [String: String])
            funding = try #require(object["funding"] as? [String: Any])
            var cases: [String: [String: Any]] = [:]
            for c in object["cases"] as? [[String: Any]] ?? [] { cases[c["name"] as! String] = c["tx"] as? [String: Any] }
            if let forged = object["forged"] as? [String: Any] { cases["forged"] = forged }
            self.cases = cases
        }

        /// The proof of `name`'s transaction: its fields from the node's JSON, and the funding
        /// output its input 0 spends.
        func proof(_ name: String) throws -> KaspaTransactionProof {
            let tx = try #require(cases[name], "no case \(name)")
            let inputs = try (tx["inputs"] as! [[String: Any]]).map { input in
                let outpoint = input["previousOutpoint"] as! [String: Any]
                return KaspaTransactionProof.Input(
                    transactionID: try Self.hex(outpoint["transactionId"]), index: UInt32(outpoint["index"] as! Int),
                    sequence: UInt64(input["sequence"] as! Int), sigOpCount: UInt8(input["sigOpCount"] as! Int),
                    signatureScript: try Self.hex(input["signatureScript"]))
            }
            let fundingID = (funding["verboseData"] as! [String: Any])["transactionId"] as! String
            #expect(try Self.hex(fundingID) == inputs[0].transactionID.bytes, "input 0 spends the funding transaction")
            let spent = try Self.output((funding["outputs"] as! [[String: Any]])[Int(inputs[0].index)])
            return KaspaTransactionProof(
                version: UInt16(tx["version"] as! Int), inputs: inputs, outputs: try (tx["outputs"] as! [[String: Any]]).map(Self.output),
                lockTime: UInt64(tx["lockTime"] as! Int), subnetworkID: try Self.hex(tx["subnetworkId"]), gas: UInt64(tx["gas"] as! Int),
                payload: try Self.hex(tx["payload"]), spent: spent)
        }

        /// The node's output JSON: `scriptPublicKey` is the version (4 hex digits) and the script.
        static func output(_ json: [String: Any]) throws -> KaspaTransactionProof.Output {
            let text = json["scriptPublicKey"] as! String
            return KaspaTransactionProof.Output(
                value: UInt64(json["value"] as! Int), scriptVersion: UInt16(text.prefix(4), radix: 16)!, script: try hex(text.dropFirst(4)))
        }

        static func hex(_ value: Any?) throws -> [UInt8] {
            try #require((value as? String).flatMap { Hex.decode($0) } ?? (value as? Substring).flatMap { Hex.decode($0) })
        }
    }

    static let curve = LibSecp256k1()

    @Test("a message, a handshake and a payment verify for the sender that signed them", arguments: [
        "handshake", "contextual_message", "payment", "payment_kachat_pay", "legacy_handshake", "long_message",
    ])
    func sdkSignedVerify(name: String) throws {
        let fixture = try Fixture("kasia_transactions.json")
        let proof = try fixture.proof(name)
        let sender = try KaspaAddress(name == "payment_kachat_pay" ? fixture.addresses["bob"]! : fixture.addresses["alice"]!)
        #expect(throws: Never.self) { try proof.verify(sender: sender, verifier: Self.curve) }
        // The proof travels as JSON and verifies the same after it.
        let decoded = try JSONDecoder().decode(KaspaTransactionProof.self, from: JSONEncoder().encode(proof))
        #expect(decoded == proof)
        #expect(throws: Never.self) { try decoded.verify(sender: sender, verifier: Self.curve) }
    }

    @Test("a valid transaction re-attributed to another sender fails, whatever spent output is claimed")
    func reattributed() throws {
        let fixture = try Fixture("kasia_transactions.json")
        let proof = try fixture.proof("contextual_message")
        let bob = try KaspaAddress(fixture.addresses["bob"]!)
        #expect(throws: KaspaTransactionProof.Failure.spentOutputNotTheSender) { try proof.verify(sender: bob, verifier: Self.curve) }
        // Claiming Bob's coin as the spent output too: the signature is Alice's, over Alice's coin.
        var claimed = proof
        claimed.spent.script = HexBytes([0x20] + bob.payload + [0xAC])
        #expect(throws: KaspaTransactionProof.Failure.badSignature) { try claimed.verify(sender: bob, verifier: Self.curve) }
    }

    @Test("a valid transaction whose payload was replaced fails: the signature hash commits to the payload")
    func payloadReplaced() throws {
        let fixture = try Fixture("kasia_transactions.json")
        let alice = try KaspaAddress(fixture.addresses["alice"]!)
        var proof = try fixture.proof("contextual_message")
        proof.payload = try fixture.proof("long_message").payload
        #expect(throws: KaspaTransactionProof.Failure.badSignature) { try proof.verify(sender: alice, verifier: Self.curve) }
        var flipped = try fixture.proof("contextual_message")
        flipped.payload.bytes[flipped.payload.bytes.count - 1] ^= 1
        #expect(throws: KaspaTransactionProof.Failure.badSignature) { try flipped.verify(sender: alice, verifier: Self.curve) }
    }

    @Test("any other signed field changed fails: the spent amount, an output, the signature")
    func fieldsCommitted() throws {
        let fixture = try Fixture("kasia_transactions.json")
        let alice = try KaspaAddress(fixture.addresses["alice"]!)
        let proof = try fixture.proof("payment")
        var amount = proof
        amount.spent.value += 1
        var output = proof
        output.outputs[0].value += 1
        var signature = proof
        signature.inputs[0].signatureScript.bytes[10] ^= 1
        for changed in [amount, output, signature] {
            #expect(throws: KaspaTransactionProof.Failure.badSignature) { try changed.verify(sender: alice, verifier: Self.curve) }
        }
        var noInputs = proof
        noInputs.inputs = []
        #expect(throws: KaspaTransactionProof.Failure.malformed) { try noInputs.verify(sender: alice, verifier: Self.curve) }
        var otherType = proof
        otherType.inputs[0].signatureScript.bytes[65] = 0x02
        #expect(throws: KaspaTransactionProof.Failure.unsupportedSignatureScript) { try otherType.verify(sender: alice, verifier: Self.curve) }
    }

    @Test("Mallory's message paying Alice proves Mallory, never Alice")
    func forgedSender() throws {
        let fixture = try Fixture("forged_sender.json")
        let proof = try fixture.proof("forged")
        #expect(throws: Never.self) { try proof.verify(sender: try KaspaAddress(fixture.addresses["mallory"]!), verifier: Self.curve) }
        #expect(throws: (any Error).self) { try proof.verify(sender: try KaspaAddress(fixture.addresses["alice"]!), verifier: Self.curve) }
    }
}
