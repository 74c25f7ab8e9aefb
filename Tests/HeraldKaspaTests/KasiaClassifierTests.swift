import Foundation
import HeraldCore
@testable import HeraldKaspa
import HeraldKit
import Testing

/// Transactions made with the official Kaspa Python SDK (Fixtures/make_fixtures.py), as node JSON.
struct SDKFixtures: Decodable {
    struct Case: Decodable {
        struct Expected: Decodable {
            var kind: String?
            var sender: String?
            var recipient: String?
            var alias: String?
            var amount: UInt64?
            var ignored: String?
            var not_kasia: Bool?
        }
        var name: String
        var tx: RpcTransaction
        var expected: Expected
        var plaintext: String?
        var reader_private_key: String?
    }
    /// The transaction that paid the coins the others spend (not Kasia: decoded on its own).
    struct Funding: Decodable {
        var outputs: [RpcTransactionOutput]
        var verboseData: RpcTransactionVerboseData
    }
    var funding: Funding
    var block_time_ms: UInt64
    var cases: [Case]

    static func load() throws -> SDKFixtures {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/kasia_transactions.json")
        return try JSONDecoder().decode(SDKFixtures.self, from: Data(contentsOf: url))
    }

    /// The outpoint map a source keeps from the outputs it has seen (here: the funding transaction's).
    func spentOutput(_ outpoint: RpcOutpoint) -> RpcUtxoEntry? {
        guard outpoint.transactionId == funding.verboseData.transactionId, Int(outpoint.index) < funding.outputs.count else { return nil }
        return funding.outputs[Int(outpoint.index)].utxoEntry
    }
}

@Suite struct KasiaClassifierTests {
    let classifier = KasiaClassifier()

    @Test func everySDKTransactionClassifiesAsExpected() throws {
        let fixtures = try SDKFixtures.load()
        #expect(fixtures.cases.count == 9)
        let cipher = KasiaCipher()
        for c in fixtures.cases {
            let result = classifier.classify(
                c.tx, timestamp: Int64(fixtures.block_time_ms / 1000), daaScore: 100_000, spentOutput: fixtures.spentOutput)
            if let ignored = c.expected.ignored {
                #expect(result == .ignored(ignored), "\(c.name)")
                continue
            }
            if c.expected.not_kasia == true {
                #expect(result == .notKasia, "\(c.name)")
                continue
            }
            guard case .event(let event) = result else {
                Issue.record("\(c.name): \(result)")
                continue
            }
            #expect(event.kind.rawValue == c.expected.kind, "\(c.name)")
            #expect(event.txID == c.tx.id, "\(c.name)")
            #expect(event.sender == c.expected.sender, "\(c.name)")
            #expect(event.recipient == c.expected.recipient, "\(c.name)")
            #expect(event.alias == c.expected.alias, "\(c.name)")
            #expect(event.amount == c.expected.amount, "\(c.name)")
            #expect(event.payloadHex == c.tx.payload && event.timestamp == 1_750_000_000 && event.daaScore == 100_000, "\(c.name)")

            // The push: within APNs's limit, payload inline up to 3,500 characters, else null.
            let push = KasiaTemplate.render(event)
            #expect(push.payload.count <= 4_096, "\(c.name)")
            let decoded = try HeraldPush(json: Data(push.payload))
            guard case .kasia(let kasia) = decoded else {
                Issue.record("\(c.name): not a Kasia push")
                continue
            }
            #expect(kasia.payloadHex == (c.tx.payload.count <= 3_500 ? c.tx.payload : nil), "\(c.name)")
            // And the app opens what the sender sealed (when it travelled inline).
            if let hex = kasia.payloadHex, let reader = c.reader_private_key, let sealed = KasiaPayload(hex: hex)?.sealed {
                #expect(try cipher.decrypt(sealed, with: KasiaPrivateKey(hex: reader)) == c.plaintext, "\(c.name)")
            }
        }
    }

    @Test func anUnknownSenderIsAskedOfTheNode() throws {
        let fixtures = try SDKFixtures.load()
        let payment = try #require(fixtures.cases.first { $0.name == "payment" })
        // Without the outpoint map: two outputs, so the sender cannot be guessed.
        let result = classifier.classify(payment.tx, timestamp: 0, daaScore: 0)
        #expect(result == .needsSender(payment.tx.inputs[0].previousOutpoint))
        // Resolved (getUtxoReturnAddress): the same event as with the map.
        guard case .event(let event) = classifier.classify(payment.tx, timestamp: 0, daaScore: 0, sender: payment.expected.sender) else {
            Issue.record("no event")
            return
        }
        #expect(event.recipient == payment.expected.recipient && event.amount == 150_000_000)
        // Even a self-send is asked: an output says whom the signer paid, not who signed.
        let message = try #require(fixtures.cases.first { $0.name == "contextual_message" })
        #expect(classifier.classify(message.tx, timestamp: 0, daaScore: 0) == .needsSender(message.tx.inputs[0].previousOutpoint))
    }

    @Test func nodeJSONDecodesExactlyAndIgnoresNewKeys() throws {
        let json = #"""
            {"header":{"hash":"aa","version":1,"timestamp":1750000000000,"bits":1,"nonce":18446744073709551615,
              "daaScore":9007199254740993,"blueScore":90000,"blueWork":"00","pruningPoint":"00","parentsByLevel":[["99"]],
              "someFutureField":{"x":1}},
             "transactions":[{"version":0,"inputs":[{"previousOutpoint":{"transactionId":"11","index":4294967295},
               "signatureScript":"","sequence":0,"sigOpCount":1,"verboseData":null,"computeBudget":0}],
               "outputs":[{"value":18446744073709551615,"scriptPublicKey":"0000","verboseData":null,"covenant":null}],
               "lockTime":0,"subnetworkId":"00","gas":0,"payload":"636970685f6d73673a","mass":0,"storageMass":7,
               "verboseData":{"transactionId":"cc","hash":"dd","computeMass":1,"blockHash":"aa","blockTime":1750000000000}}],
             "verboseData":{"hash":"aa","isChainBlock":true,"mergeSetBluesHashes":["bb"],"childrenHashes":[]}}
            """#
        let block = try JSONDecoder().decode(RpcBlock.self, from: Data(json.utf8))
        #expect(block.header.nonce == .max)
        #expect(block.header.daaScore == 9_007_199_254_740_993)  // 2^53 + 1: not rounded through a Double
        #expect(block.transactions[0].outputs[0].value == .max)
        #expect(block.transactions[0].inputs[0].previousOutpoint.index == .max)
        #expect(block.transactions[0].id == "cc")
        #expect(block.verboseData?.mergeSetBluesHashes == ["bb"])
    }
}

@Suite struct BlockFrameTests {
    /// The fast path that reads blocks (it skips the scripts of non-Kasia transactions) reads the
    /// same transactions as JSONDecoder, whatever the key order or spacing.
    @Test func theBlockScannerReadsWhatJSONDecoderReads() throws {
        let raw = try RawFixtures.load()
        let transactions = Array(raw.cases.values) + raw.bulk.prefix(5)
        let header: [String: Any] = [
            "hash": String(repeating: "ab", count: 32), "version": 1, "timestamp": 1_750_000_000_000, "bits": 1,
            "nonce": UInt64.max, "daaScore": 9_007_199_254_740_993, "blueScore": 1, "parentsByLevel": [["00"]],
        ]
        for options: JSONSerialization.WritingOptions in [[], [.prettyPrinted], [.sortedKeys]] {
            let block: [String: Any] = ["header": header, "transactions": transactions, "verboseData": ["hash": "ab", "mergeSetBluesHashes": ["cd"]]]
            let frame = try JSONSerialization.data(withJSONObject: ["method": "blockAddedNotification", "params": ["BlockAdded": ["block": block]]], options: options)
            guard case .notification(.blockAdded(let scanned))? = KaspaFrame.decode(frame) else {
                Issue.record("the frame did not decode")
                return
            }
            let decoded = try JSONDecoder().decode(RpcBlock.self, from: try JSONSerialization.data(withJSONObject: block))
            #expect(scanned == decoded)
            #expect(scanned.header.daaScore == 9_007_199_254_740_993 && scanned.header.nonce == .max)
            // Inputs and outputs are read for every Kasia transaction: all but the plain transfer.
            #expect(scanned.transactions.filter { !$0.outputs.isEmpty }.count == transactions.count - 1)
        }
    }

    /// A V2 answer is read for the coins of the transactions asked about: the others are skipped
    /// unread, however they are shaped; a frame of another call is no answer.
    @Test func theCoinScannerDecodesOnlyTheTransactionsAskedAbout() throws {
        let coin: [String: Any] = ["amount": 500_000_000_000, "scriptPublicKey": "0000" + String(repeating: "ab", count: 34),
            "blockDaaScore": 1, "isCoinbase": false, "verboseData": ["scriptPublicKeyType": "pubkey", "scriptPublicKeyAddress": "kaspa:qalice"]]
        let asked: [String: Any] = [
            "inputs": [["previousOutpoint": ["transactionId": "f0", "index": 1], "signatureScript": "41\\\"", "verboseData": ["utxoEntry": coin]]],
            "outputs": [], "payload": "", "verboseData": ["transactionId": "t1"],
        ]
        // Not asked about: not even well formed inside.
        let other: [String: Any] = ["verboseData": ["transactionId": "t2"], "inputs": "not a list"]
        for options: JSONSerialization.WritingOptions in [[], [.prettyPrinted], [.sortedKeys]] {
            let frame = try JSONSerialization.data(withJSONObject: ["id": 7, "method": "getVirtualChainFromBlockV2", "params": [
                "removedChainBlockHashes": [String](), "addedChainBlockHashes": ["c1", "c2"],
                "chainBlockAcceptedTransactions": [
                    ["chainBlockHeader": ["hash": "c1"], "acceptedTransactions": [other]],
                    ["chainBlockHeader": ["hash": "c2"], "acceptedTransactions": [other, asked]],
                ],
            ]], options: options)
            let coins = try #require(SpentCoinsScanner.coins(in: frame, spentBy: ["t1"]))
            #expect(coins == [RpcOutpoint(transactionId: "f0", index: 1): RpcUtxoEntry(
                amount: 500_000_000_000, scriptPublicKey: "0000" + String(repeating: "ab", count: 34), address: "kaspa:qalice")])
            // One asked about but shaped otherwise gives no coins, and the rest still reads.
            #expect(SpentCoinsScanner.coins(in: frame, spentBy: ["t2", "t3"]) == [:])
            #expect(SpentCoinsScanner.coins(in: frame.dropLast(2), spentBy: ["t1"]) == nil)
        }
        let block = try JSONSerialization.data(withJSONObject: ["id": 8, "method": "getBlock", "params": ["block": ["header": [:]]]])
        #expect(SpentCoinsScanner.coins(in: block, spentBy: ["t1"]) == nil)
    }

    /// Answers are told from notifications by their envelope, read without parsing `params`; a
    /// node's error may be an object with a message or a bare string.
    @Test func answerEnvelopes() throws {
        func answer(_ text: String) -> (UInt64, String, String?)? {
            guard case .answer(let id, let method, let error)? = KaspaFrame.decode(Data(text.utf8)) else { return nil }
            return (id, method, error)
        }
        #expect(answer(#"{"id":5,"method":"getBlock","params":{"block":{"x":[1,{"y":"}"}]}},"error":null}"#).map { "\($0)" } == "(5, \"getBlock\", nil)")
        #expect(answer(#"{"method":"getBlock","error":{"message":"block \"x\" not found"},"id":6}"#)?.2 == #"block "x" not found"#)
        #expect(answer(#"{"id":7,"error":"busy"}"#)?.2 == "busy")
        #expect(answer(#"{"id":8,"method":"m","error":{}}"#)?.2 == "error")
        #expect(answer(#"{"id":-1,"method":"m","params":{}}"#) == nil)
        #expect(answer(#"{"id":9,"method":"m","params":{"#) == nil)
    }
}
