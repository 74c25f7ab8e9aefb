import Foundation
import HeraldKit
import KasiaProtocol
import Testing

/// A quick reply as the transaction payload the contact's Kasia reads: checked against the
/// reference cipher (`kasia_cipher_ref.py`) both ways.
@Suite struct KasiaReplyDraftTests {
    let cipher = KasiaCipher()

    @Test("the reference opens a hundred drafts: each a contextual message under the draft's alias, sealed to the contact")
    func referenceOpensDrafts() throws {
        struct Item: Codable { var private_key: String; var payload_hex: String }
        struct Request: Codable { var payloads: [Item] }
        struct Answer: Decodable { struct Message: Decodable { var alias: String; var plaintext: String }; var messages: [Message?] }
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz ABC0123456789.,!?é☕🙂日本")
        var items: [Item] = []
        var sent: [(alias: String, text: String)] = []
        for i in 0..<100 {
            let contactKey = try cipher.randomPrivateKey()
            let contact = try cipher.address(of: contactKey, prefix: i % 2 == 0 ? .mainnet : .testnet)
            let alias = Hex.encode((0..<6).map { _ in UInt8.random(in: 0...255) })
            let text = "r" + String((0..<Int.random(in: 0...300)).map { _ in alphabet.randomElement()! })
            let draft = try KasiaReplyDraft(replying: text, to: contact, alias: alias, cipher: cipher)
            #expect(draft.payloadHex == Hex.encode(draft.payload) && draft.recipient == contact)
            items.append(Item(private_key: Hex.encode(contactKey.bytes), payload_hex: draft.payloadHex))
            sent.append((alias, text))
        }
        let answer = try JSONDecoder().decode(Answer.self, from: Fixtures.python(["open-comm"], input: JSONEncoder().encode(Request(payloads: items))))
        #expect(answer.messages.count == 100)
        for (message, (alias, text)) in zip(answer.messages, sent) {
            #expect(message?.alias == alias && message?.plaintext == text)
        }
    }

    @Test("the counterpart: the reference's contextual messages to this wallet open in HeraldKit, under their alias")
    func draftsCounterpartOpens() throws {
        struct Made: Decodable { struct Item: Decodable { var plaintext: String; var payload_hex: String }; var payloads: [Item] }
        let key = try cipher.randomPrivateKey()
        let address = try cipher.address(of: key)
        let made = try JSONDecoder().decode(Made.self, from: Fixtures.python(["make-comm", address.string, "20f9260eb781", "100"]))
        #expect(made.payloads.count == 100)
        for item in made.payloads {
            guard case .contextualMessage(let alias, _)? = KasiaPayload(hex: item.payload_hex), let sealed = KasiaPayload(hex: item.payload_hex)?.sealed else {
                Issue.record("not a contextual message: \(item.payload_hex.prefix(40))")
                continue
            }
            #expect(alias == "20f9260eb781")
            #expect(try cipher.decrypt(sealed, with: key) == item.plaintext)
        }
    }

    @Test("an empty or oversized reply, a malformed alias and an address the cipher cannot seal to are refused, typed")
    func refusals() throws {
        let contact = try cipher.address(of: try cipher.randomPrivateKey())
        #expect(throws: KasiaReplyDraft.Failure.empty) { try KasiaReplyDraft(replying: " \n ", to: contact, alias: "20f9260eb781", cipher: cipher) }
        #expect(throws: KasiaReplyDraft.Failure.tooLong) {
            try KasiaReplyDraft(replying: String(repeating: "é", count: 1_001), to: contact, alias: "20f9260eb781", cipher: cipher)
        }
        for alias in ["", "20F9260EB781", "20f9260eb78", "20f9260eb7810", "20f9260eb78g"] {
            #expect(throws: KasiaReplyDraft.Failure.invalidAlias) { try KasiaReplyDraft(replying: "hi", to: contact, alias: alias, cipher: cipher) }
        }
        // An ECDSA address: the cipher seals to Schnorr keys only.
        let ecdsa = try KaspaAddress("kaspatest:qyqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqhe837j2d")
        #expect(throws: KasiaReplyDraft.Failure.cipher(.notASchnorrAddress)) { try KasiaReplyDraft(replying: "hi", to: ecdsa, alias: "20f9260eb781", cipher: cipher) }
    }
}
