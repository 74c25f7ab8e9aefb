import Crypto
import Foundation
import HeraldKit
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

    /// The fixtures' keys, as `make_fixtures.py` derives them: SHA-256 of `herald-fixture-<name>`.
    static func fixtureKey(_ name: String) throws -> KasiaPrivateKey {
        try KasiaPrivateKey(bytes: Array(SHA256.hash(data: Array("herald-fixture-\(name)".utf8))))
    }

    @Test("every SDK-signed transaction's id, computed from its fields, is the id the SDK gave it")
    func transactionIDs() throws {
        let fixture = try Fixture("kasia_transactions.json")
        #expect(fixture.cases.count >= 8)
        for (name, tx) in fixture.cases {
            let given = try #require((tx["verboseData"] as? [String: Any])?["transactionId"] as? String, "\(name)")
            #expect(Hex.encode(try fixture.proof(name).transactionID()) == given, "\(name)")
        }
        let forged = try Fixture("forged_sender.json")
        let given = try #require((forged.cases["forged"]?["verboseData"] as? [String: Any])?["transactionId"] as? String)
        #expect(Hex.encode(try forged.proof("forged").transactionID()) == given)
    }

    @Test("a genuine proof shows only what it proves: another txId, another kind, another amount, or a device it does not pay is refused")
    func bindsWhatIsShown() throws {
        let fixture = try Fixture("kasia_transactions.json")
        let proof = try fixture.proof("payment")  // Alice pays Bob 1.5 KAS
        let txID = try #require((fixture.cases["payment"]?["verboseData"] as? [String: Any])?["transactionId"] as? String)
        let alice = try #require(fixture.addresses["alice"])
        let resolver = try NotificationContentResolver(cipher: KasiaCipher())
        func check(txID id: String = txID, kind: KasiaPush.Kind = .payment, amount: UInt64? = 150_000_000, device: String = "bob")
            throws -> NotificationContentResolver.SenderCheck
        {
            let push = KasiaPush(
                kind: kind, txID: id, sender: alice, payloadHex: nil, timestamp: 0, daaScore: 0, amount: amount, proof: proof)
            return resolver.checkSender(of: push, contacts: [], privateKey: try Self.fixtureKey(device))
        }
        #expect(try check() == .proven(alice))
        #expect(try check(amount: nil) == .proven(alice))
        #expect(try check(amount: 10_000_000_000_000) == .failed(.otherAmount), "100,000 KAS claimed on a 1.5 KAS proof")
        #expect(try check(txID: String(repeating: "ab", count: 32)) == .failed(.otherTransaction))
        #expect(try check(kind: .handshake) == .failed(.otherKind))
        #expect(try check(kind: .contextualMessage) == .failed(.otherKind))
        #expect(try check(device: "funder") == .failed(.notToThisDevice), "a payment to another wallet")
        #expect(try check(amount: nil, device: "alice") == .failed(.notToThisDevice), "the sender's own change is not a payment to her")
        // Through the extension's path: the push is refused, never shown with the claimed amount.
        let lie = #"{"aps":{"alert":{"title":"Payment Received","body":"100000 KAS"}},"kasia":{"type":"payment","txId":"\#(txID)","sender":"\#(alice)","payload":null,"timestamp":1,"daaScore":1,"amount":10000000000000,"proof":\#(String(decoding: try JSONEncoder().encode(proof), as: UTF8.self))}}"#
        let (outcome, rejection) = resolver.resolve(verified: .success(Array(lie.utf8)), contacts: [], privateKey: try Self.fixtureKey("bob"))
        #expect(rejection == .senderNotProven)
        #expect(!outcome.body.contains("100000"))
    }

    @Test("a resolver without a BIP340 verifier is not made: setup says so, instead of showing unchecked senders")
    func verifierRequired() {
        struct NoVerifierCurve: Secp256k1Curve {
            func publicKey(privateKey: [UInt8]) throws(KasiaCipherError) -> [UInt8] { throw .invalidPrivateKey }
            func sharedX(privateKey: [UInt8], publicKey: [UInt8]) throws(KasiaCipherError) -> [UInt8] { throw .invalidPrivateKey }
        }
        #expect(throws: NotificationContentResolver.SetupError.noSchnorrVerifier) {
            try NotificationContentResolver(cipher: KasiaCipher(curve: NoVerifierCurve()))
        }
        #expect(throws: Never.self) { try NotificationContentResolver(cipher: KasiaCipher(curve: NoVerifierCurve()), verifier: Self.curve) }
    }
}
