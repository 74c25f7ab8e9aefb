import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldKaspa
import HeraldKit
import HeraldPushCore
import HeraldTestSupport
import KaspaNodeSimulator
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Alice's conversation as it lands on the chain, each transaction spending the one before's
/// change (`Fixtures/make_chain_fixture.py`, the official SDK).
struct ChainFixture {
    let transactions: [String: [String: Any]]
    let plaintexts: [String: String]
    let alice: String
    let bob: String
    /// Bob's private key: he reads Alice's messages.
    let bobKey: String

    static func load() throws -> ChainFixture {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/kasia_chain.json")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        let addresses = object["addresses"] as! [String: String]
        return ChainFixture(
            transactions: object["transactions"] as! [String: [String: Any]], plaintexts: object["plaintexts"] as! [String: String],
            alice: addresses["alice"]!, bob: addresses["bob"]!, bobKey: object["reader_private_key"] as! String)
    }

    /// The node's JSON of `name`, decoded as the chain source decodes it.
    func decoded(_ name: String) throws -> RpcTransaction {
        try JSONDecoder().decode(RpcTransaction.self, from: JSONSerialization.data(withJSONObject: transactions[name]!))
    }
}

@Suite("Kasia sender proofs: the chain source fills them, the phone checks them")
struct SenderProofTests {
    static let curve = LibSecp256k1()

    @Test("the classifier gives each Kasia transaction whose spent coin is known a proof that verifies for its sender")
    func classifierFillsProofs() throws {
        let chain = try ChainFixture.load()
        let alice = try KaspaAddress(chain.alice)
        // What the chain memory knows: the outputs of the transactions before (the self-stash is Kasia).
        var outputs: [RpcOutpoint: RpcUtxoEntry] = [:]
        for name in ["self_stash", "handshake", "contextual_message"] {
            let tx = try chain.decoded(name)
            for (index, output) in tx.outputs.enumerated() { outputs[RpcOutpoint(transactionId: tx.id!, index: UInt32(index))] = output.utxoEntry }
        }
        for name in ["handshake", "contextual_message", "payment"] {
            let tx = try chain.decoded(name)
            guard case .event(let event) = KasiaClassifier().classify(tx, timestamp: 0, daaScore: 1, spentOutput: { outputs[$0] }) else {
                Issue.record("\(name) is not an event")
                continue
            }
            #expect(event.sender == chain.alice)
            var proof = try #require(event.proof, "\(name)")
            // The proof leaves the payload out (the push carries it once); with it, it verifies.
            #expect(proof.payload.bytes.isEmpty)
            proof.payload = HexBytes(try #require(Hex.decode(tx.payload)))
            #expect(throws: Never.self, "\(name)") { try proof.verify(sender: alice, verifier: Self.curve) }
            #expect(proof.spentAddress(prefix: .mainnet)?.string == chain.alice)
        }
        // The handshake's own coin came from the self-stash: without it in memory, no proof and the node is asked.
        let handshake = try chain.decoded("handshake")
        #expect(KasiaClassifier().classify(handshake, timestamp: 0, daaScore: 1) == .needsSender(handshake.inputs[0].previousOutpoint))
        guard case .event(let asked) = KasiaClassifier().classify(handshake, timestamp: 0, daaScore: 1, sender: chain.alice) else {
            Issue.record("no event")
            return
        }
        #expect(asked.proof == nil)
    }

    @Test("a node that gives the spent coin in the input's verbose data names the sender and fills the proof without being asked")
    func nodeGivenUtxoEntry() throws {
        let chain = try ChainFixture.load()
        let stash = try chain.decoded("self_stash")
        var json = chain.transactions["handshake"]!
        var inputs = json["inputs"] as! [[String: Any]]
        let spent = (chain.transactions["self_stash"]!["outputs"] as! [[String: Any]])[0]
        inputs[0]["verboseData"] = [
            "utxoEntry": [
                "amount": spent["value"]!, "scriptPublicKey": spent["scriptPublicKey"]!, "blockDaaScore": 7, "isCoinbase": false,
                "verboseData": ["scriptPublicKeyType": "pubkey", "scriptPublicKeyAddress": chain.alice],
            ]
        ]
        json["inputs"] = inputs
        let decoded = try JSONDecoder().decode(RpcTransaction.self, from: JSONSerialization.data(withJSONObject: json))
        #expect(decoded.inputs[0].utxoEntry == stash.outputs[0].utxoEntry)
        guard case .event(let event) = KasiaClassifier().classify(decoded, timestamp: 0, daaScore: 1) else {
            Issue.record("not an event")
            return
        }
        #expect(event.sender == chain.alice)
        var proof = try #require(event.proof)
        proof.payload = HexBytes(try #require(Hex.decode(decoded.payload)))
        #expect(throws: Never.self) { try proof.verify(sender: try KaspaAddress(chain.alice), verifier: Self.curve) }
        // A transaction missing a signed field gets no proof (the phone could not check it), but still its event.
        var partial = decoded
        partial.lockTime = nil
        guard case .event(let without) = KasiaClassifier().classify(partial, timestamp: 0, daaScore: 1) else {
            Issue.record("not an event")
            return
        }
        #expect(without.proof == nil && without.sender == chain.alice)
    }

    @Test("the proof is the template's last member: an unsealed device's push is byte for byte the push without it; a sealed one sheds the payload, then the proof")
    func templateCarriesProofForSealedOnly() throws {
        let chain = try ChainFixture.load()
        let message = try chain.decoded("contextual_message")
        let handshake = try chain.decoded("handshake")
        let spent = handshake.outputs[Int(message.inputs[0].previousOutpoint.index)].utxoEntry
        guard case .event(let event) = KasiaClassifier().classify(message, timestamp: 5, daaScore: 6, spentOutput: { _ in spent }) else {
            Issue.record("not an event")
            return
        }
        var bare = event
        bare.proof = nil
        for privacy in PushPrivacy.allCases {
            let withProof = KasiaTemplate.render(event, privacy: privacy)
            let without = KasiaTemplate.render(bare, privacy: privacy)
            #expect(withProof.payload != without.payload)
            #expect(KasiaTemplate.withoutProof(withProof) == without, "\(privacy)")
            // Any other push is left as it is.
            #expect(KasiaTemplate.withoutProof(without) == without)
            let decoded = try HeraldPush(json: Data(withProof.payload))
            guard case .kasia(let push) = decoded else {
                Issue.record("not a Kasia push")
                continue
            }
            var proof = try #require(push.proof)
            proof.payload = HexBytes(try #require(push.payloadHex.flatMap { Hex.decode($0) }))
            #expect(throws: Never.self) { try proof.verify(sender: try KaspaAddress(chain.alice), verifier: Self.curve) }
        }
        // A custom push shaped like Kasia's but whose "proof" is not the template's last member stays whole.
        let custom = RenderedPush(
            pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(#"{"aps":{},"kasia":{"proof":{"a":1},"x":2}}"#.utf8))
        #expect(KasiaTemplate.withoutProof(custom) == custom)
        // Shrinking: the inline payload goes first, then the proof.
        let rendered = KasiaTemplate.render(event)
        let first = try #require(rendered.shrunk())
        #expect(first.payload.count < rendered.payload.count)
        let firstJSON = try JSONSerialization.jsonObject(with: Data(first.payload)) as! [String: Any]
        #expect((firstJSON["kasia"] as! [String: Any])["payload"] is NSNull && (firstJSON["kasia"] as! [String: Any])["proof"] != nil)
        let second = try #require(first.shrunk())
        let secondJSON = try JSONSerialization.jsonObject(with: Data(second.payload)) as! [String: Any]
        #expect((secondJSON["kasia"] as! [String: Any])["proof"] == nil)
    }

    @Test("through herald serve: a sealed iPhone's pushes carry proofs HeraldKit verifies; an unsealed one's carry none; a lying gateway's sender is refused")
    func endToEnd() async throws {
        let chain = try ChainFixture.load()
        let node = try await KaspaNodeSimulator.start()
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try FollowingHerald.start(node: node, database: directory.appendingPathComponent("herald.sqlite"))
        defer { herald.stop() }

        // Bob's phones, sealed and not: his handshakes and payments, and Alice's messages.
        let keys = SealedPushKeys()
        let sealedBody = #"{"device_token":"\#(String(repeating: "5e", count: 32))","platform":"ios","watched_addresses":["\#(chain.alice)","\#(chain.bob)"],"addresses":["\#(chain.bob)"],"push_keys":{"p256dh":"\#(keys.p256dh)","auth":"\#(keys.authSecret)"}}"#
        let (status, answer) = try await http("POST", herald.api + "/v1/push/register", sealedBody)
        #expect(status == 200, "\(String(decoding: answer, as: UTF8.self))")
        let signingKey = try #require((try JSONSerialization.jsonObject(with: answer) as? [String: Any])?["signing_key"] as? String)
        let clear = String(repeating: "c1", count: 32)
        try await herald.register(clear, watched: [chain.alice, chain.bob], addresses: [chain.bob])
        try await herald.waitConnected()

        // Each block as the node makes it: the funding (not Kasia), then Alice's self-stash, handshake, message and payment.
        await node.produce([chain.transactions["funding"]!, chain.transactions["self_stash"]!])
        for name in ["handshake", "contextual_message", "payment"] { await node.produce([chain.transactions[name]!]) }
        let sealed = try await herald.pushes(String(repeating: "5e", count: 32), reaching: 3)
        let unsealed = try await herald.pushes(clear, reaching: 3)
        let stats = try await herald.kaspaStats()
        try #require(sealed.count == 3 && unsealed.count == 3, "sealed \(sealed.count), unsealed \(unsealed.count): \(stats)")

        // The unsealed device's pushes name the sender as Herald read it, and carry no proof.
        for push in unsealed {
            let payload = try #require(push["payload"] as? String)
            #expect(!payload.contains("\"proof\""), "\(payload)")
            #expect(payload.contains(chain.alice))
        }
        // The sealed device's: Apple sees the generic alert and ciphertext; HeraldKit opens, checks
        // Herald's signature, then Alice's own signature over each transaction.
        let authenticator = try PushAuthenticator(pinnedKey: signingKey, keys: keys)
        let resolver = try NotificationContentResolver(cipher: KasiaCipher())
        let bob = try KasiaPrivateKey(hex: chain.bobKey)
        var kinds: [String] = []
        for push in sealed {
            let payload = try #require(push["payload"] as? String)
            #expect(!payload.contains(chain.alice) && !payload.contains("proof"))
            let userInfo = try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])
            let document = try authenticator.document(userInfo: userInfo)
            guard case .kasia(let kasia) = try HeraldPush(json: Data(document)) else {
                Issue.record("not a Kasia push")
                continue
            }
            kinds.append(kasia.kind.rawValue)
            #expect(kasia.proof != nil)
            #expect(resolver.checkSender(of: kasia) == .proven(chain.alice))
            let (outcome, rejection) = resolver.resolve(
                verified: .success(document), contacts: [Contact(address: chain.alice, name: "Alice")], privateKey: bob)
            #expect(rejection == nil && outcome.senderProven)
            if kasia.kind == .contextualMessage { #expect(outcome.title == "Alice" && outcome.body == "hi bob") }
            if kasia.kind == .handshake { #expect(outcome.body == "From Alice") }

            // A gateway that lies about the sender (its document signed, so it reached the resolver)
            // is caught by the proof: the transaction is Alice's, whatever the push says.
            var forged = try #require(try JSONSerialization.jsonObject(with: Data(document)) as? [String: Any])
            var fields = forged["kasia"] as! [String: Any]
            fields["sender"] = chain.bob
            forged["kasia"] = fields
            let lie = try JSONSerialization.data(withJSONObject: forged)
            let (refused, reason) = resolver.resolve(verified: .success(Array(lie)), contacts: [Contact(address: chain.bob, name: "Bob")], privateKey: bob)
            #expect(reason == .senderNotProven && refused.body == "New message" && refused.record == nil)
            // So is one that swaps the message, keeping Alice as the sender.
            fields["sender"] = chain.alice
            fields["payload"] = chain.transactions["payment"]!["payload"] as? String == fields["payload"] as? String
                ? chain.transactions["handshake"]!["payload"] : chain.transactions["payment"]!["payload"]
            forged["kasia"] = fields
            let swapped = try JSONSerialization.data(withJSONObject: forged)
            #expect(resolver.resolve(verified: .success(Array(swapped)), contacts: [], privateKey: bob).rejection == .senderNotProven)
        }
        #expect(kinds.sorted() == ["contextual_message", "handshake", "payment"])
    }

    @Test(
        "a wallet's first message, spending a coin Herald never saw made, carries a proof from the node's V2 answer; a node without V2 is asked three times, and the messages go with Herald's word",
        arguments: [true, false])
    func firstMessageOfAWallet(nodeAnswersV2: Bool) async throws {
        let chain = try ChainFixture.load()
        let node = try await KaspaNodeSimulator.start()
        node.setAnswersV2(nodeAnswersV2)
        // Alice was funded and stashed her keys before Herald followed the chain: the coin her
        // handshake spends is not in its memory.
        await node.produce([chain.transactions["funding"]!, chain.transactions["self_stash"]!])
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try FollowingHerald.start(node: node, database: directory.appendingPathComponent("herald.sqlite"))
        defer { herald.stop() }
        let keys = SealedPushKeys()
        let token = String(repeating: "5f", count: 32)
        let body = #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["\#(chain.alice)","\#(chain.bob)"],"addresses":["\#(chain.bob)"],"push_keys":{"p256dh":"\#(keys.p256dh)","auth":"\#(keys.authSecret)"}}"#
        let (status, answer) = try await http("POST", herald.api + "/v1/push/register", body)
        try #require(status == 200, "\(String(decoding: answer, as: UTF8.self))")
        let signingKey = try #require((try JSONSerialization.jsonObject(with: answer) as? [String: Any])?["signing_key"] as? String)
        try await herald.waitConnected()

        // The handshake spends the stash's change, which the node made; the payment spends the
        // change of a message neither Herald nor the node saw, so only the node's return address names Alice.
        func id(_ name: String) -> String { (chain.transactions[name]!["verboseData"] as! [String: Any])["transactionId"] as! String }
        await node.produce([chain.transactions["handshake"]!], senders: [id("handshake"): chain.alice])
        await node.produce([chain.transactions["payment"]!], senders: [id("payment"): chain.alice])
        // Three more such payments (the same transaction under other ids: proofs do not matter here).
        for n in 1...3 {
            var payment = chain.transactions["payment"]!
            let renamed = String(id("payment").dropLast(2)) + String(format: "%02x", n)
            payment["verboseData"] = ["transactionId": renamed]
            await node.produce([payment], senders: [renamed: chain.alice])
        }
        let pushes = try await herald.pushes(token, reaching: 5)
        let stats = try await herald.kaspaStats()
        try #require(pushes.count == 5, "\(stats)")

        let authenticator = try PushAuthenticator(pinnedKey: signingKey, keys: keys)
        let resolver = try NotificationContentResolver(cipher: KasiaCipher())
        var checks: [String: [NotificationContentResolver.SenderCheck]] = [:]
        for push in pushes {
            let userInfo = try #require(try JSONSerialization.jsonObject(with: Data((push["payload"] as! String).utf8)) as? [String: Any])
            guard case .kasia(let kasia) = try HeraldPush(json: Data(try authenticator.document(userInfo: userInfo))) else {
                Issue.record("not a Kasia push")
                continue
            }
            #expect(kasia.sender == chain.alice)
            checks[kasia.kind.rawValue, default: []].append(resolver.checkSender(of: kasia))
        }
        #expect(checks["handshake"] == [nodeAnswersV2 ? .proven(chain.alice) : .unchecked])
        #expect(checks["payment"] == Array(repeating: .unchecked, count: 4))
        // A node with V2 is asked for each unknown coin, and its return address only when the
        // answer lacks the coin; one without is asked three times, then not for a while.
        let asked = node.requests
        #expect(asked.filter { $0 == "getVirtualChainFromBlockV2" }.count == (nodeAnswersV2 ? 5 : 3))
        #expect(asked.filter { $0 == "getUtxoReturnAddress" }.count == (nodeAnswersV2 ? 4 : 5))
        #expect(stats["coin_lookups"] as? Int == (nodeAnswersV2 ? 5 : 3))
        await node.shutdown()
    }

    @Test("a proof whose payload did not fit is checked by the app on the transaction it fetched")
    func appChecksFetchedTransaction() throws {
        let chain = try ChainFixture.load()
        let message = try chain.decoded("contextual_message")
        let spent = try chain.decoded("handshake").outputs[1].utxoEntry
        let proof = try #require(message.senderProof(spending: spent))
        let push = KasiaPush(kind: .contextualMessage, txID: message.id!, sender: chain.alice, payloadHex: nil, timestamp: 1, daaScore: 1, proof: proof)
        let resolver = try NotificationContentResolver(cipher: KasiaCipher())
        #expect(resolver.checkSender(of: push) == .unchecked)
        let outcome = resolver.resolve(push, contacts: [], privateKey: nil)
        #expect(!outcome.senderProven)
        guard case .pendingFetch(let pending)? = outcome.record else {
            Issue.record("no pending fetch")
            return
        }
        // The app fetched the transaction: its payload completes the proof.
        var fetched = try #require(pending.proof)
        fetched.payload = HexBytes(try #require(Hex.decode(message.payload)))
        #expect(throws: Never.self) { try fetched.verify(sender: try KaspaAddress(pending.sender), verifier: Self.curve) }
        // Another transaction's payload does not.
        fetched.payload = HexBytes(try #require(Hex.decode(try chain.decoded("payment").payload)))
        #expect(throws: KaspaTransactionProof.Failure.badSignature) { try fetched.verify(sender: try KaspaAddress(pending.sender), verifier: Self.curve) }
    }
}
