import Foundation
import HeraldKit
import KasiaProtocol
import Testing

/// The extension's function over a table of pushes: each type, inline and null payloads, unknown
/// contacts, wrong keys and tampered payloads.
@Suite struct NotificationContentResolverTests {
    let cipher = KasiaCipher()

    struct Row: CustomStringConvertible {
        var name: String
        var push: HeraldPush
        var key: KasiaPrivateKey?
        var title: String
        var body: String
        /// "message:<plaintext>", "pending", or nil (nothing stored).
        var record: String?
        var description: String { name }
    }

    func table() throws -> (contacts: [Contact], rows: [Row]) {
        let me = try cipher.randomPrivateKey()
        let myAddress = try cipher.address(of: me)
        let stranger = try cipher.randomPrivateKey()
        let alice = try cipher.address(of: cipher.randomPrivateKey()).string
        let bob = try cipher.address(of: cipher.randomPrivateKey()).string
        let bobShort = KasiaText.shortAddress(bob)
        func seal(_ text: String, to address: KaspaAddress? = nil) throws -> [UInt8] { try cipher.encrypt(text, to: address ?? myAddress) }
        func comm(_ text: String) throws -> String { Hex.encode(KasiaPayload.contextualMessagePayload(alias: "a1b2c3d4e5f6", sealed: try seal(text))) }
        func kasia(_ kind: KasiaPush.Kind, from sender: String = alice, _ payloadHex: String?, amount: UInt64? = nil) -> HeraldPush {
            .kasia(KasiaPush(kind: kind, txID: "tx-\(kind)-\(payloadHex?.count ?? 0)", sender: sender, payloadHex: payloadHex, timestamp: 1_750_000_000, daaScore: 9, amount: amount))
        }
        var tampered = try KasiaPayload.handshakePayload(sealed: seal("{\"type\":\"handshake\"}"))
        tampered[tampered.count - 20] ^= 0x40
        let legacyHex = Array("ciph_msg:1:comm:a1b2c3d4e5f6:".utf8) + Array(Hex.encode(try seal("old hex body")).utf8)
        let handshakeJSON = #"{"type":"handshake","alias":"0123456789ab","timestamp":1750000000000,"version":1}"#
        let paymentJSON = #"{"type":"payment","message":"thanks","amount":1.5,"timestamp":1750000000000,"version":1}"#
        let audio = #"{"type":"file","name":"voice.m4a","size":40000,"mimeType":"audio/mp4","content":"..."}"#
        let pdf = #"{"type":"file","name":"invoice.pdf","size":1200,"mimeType":"application/pdf","content":"..."}"#
        return ([Contact(address: alice, name: "Alice")], [
            Row(name: "message, inline, contact", push: kasia(.contextualMessage, try comm("Hey!")), key: me, title: "Alice", body: "Hey!", record: "message:Hey!"),
            Row(name: "message, inline, unknown sender", push: kasia(.contextualMessage, from: bob, try comm("who is this")), key: me, title: bobShort, body: "who is this", record: "message:who is this"),
            Row(name: "message, unicode", push: kasia(.contextualMessage, try comm("☕ 日本 🙂")), key: me, title: "Alice", body: "☕ 日本 🙂", record: "message:☕ 日本 🙂"),
            Row(name: "message, null payload", push: kasia(.contextualMessage, nil), key: me, title: "Alice", body: "New message", record: "pending"),
            Row(name: "message, null payload, unknown sender", push: kasia(.contextualMessage, from: bob, nil), key: me, title: bobShort, body: "New message", record: "pending"),
            Row(name: "message, wrong key", push: kasia(.contextualMessage, try comm("secret")), key: stranger, title: "Alice", body: "New message", record: "pending"),
            Row(name: "message, no key yet", push: kasia(.contextualMessage, try comm("secret")), key: nil, title: "Alice", body: "New message", record: "pending"),
            Row(name: "message, voice (audio file)", push: kasia(.contextualMessage, try comm(audio)), key: me, title: "Alice", body: "Voice message", record: "message:" + audio),
            Row(name: "message, voice (aud: prefix)", push: kasia(.contextualMessage, try comm("aud:AAAA")), key: me, title: "Alice", body: "Voice message", record: "message:aud:AAAA"),
            Row(name: "message, file", push: kasia(.contextualMessage, try comm(pdf)), key: me, title: "Alice", body: "invoice.pdf", record: "message:" + pdf),
            Row(name: "message, hex body (Kasia ≤ Aug 2025)", push: kasia(.contextualMessage, Hex.encode(legacyHex)), key: me, title: "Alice", body: "old hex body", record: "message:old hex body"),
            Row(name: "message, not Kasia hex", push: kasia(.contextualMessage, "zz"), key: me, title: "Alice", body: "New message", record: "pending"),
            Row(name: "message, payload of another type", push: kasia(.contextualMessage, Hex.encode(KasiaPayload.handshakePayload(sealed: try seal("x")))), key: me, title: "Alice", body: "New message", record: "pending"),
            Row(name: "handshake, inline, contact", push: kasia(.handshake, Hex.encode(KasiaPayload.handshakePayload(sealed: try seal(handshakeJSON)))), key: me, title: "New Contact Request", body: "From Alice", record: "message:" + handshakeJSON),
            Row(name: "handshake, inline, unknown sender", push: kasia(.handshake, from: bob, Hex.encode(KasiaPayload.handshakePayload(sealed: try seal(handshakeJSON)))), key: me, title: "New Contact Request", body: "From \(bobShort)", record: "message:" + handshakeJSON),
            Row(name: "handshake, legacy ciph_msg: + sealed", push: kasia(.handshake, from: bob, Hex.encode(Array("ciph_msg:".utf8) + (try seal("ciph_msg:1:handshake:{}")))), key: me, title: "New Contact Request", body: "From \(bobShort)", record: "message:ciph_msg:1:handshake:{}"),
            Row(name: "handshake, null payload", push: kasia(.handshake, from: bob, nil), key: me, title: "New Contact Request", body: "From \(bobShort)", record: "pending"),
            Row(name: "handshake, tampered", push: kasia(.handshake, Hex.encode(tampered)), key: me, title: "New Contact Request", body: "From Alice", record: "pending"),
            Row(name: "payment, inline", push: kasia(.payment, Hex.encode(KasiaPayload.paymentPayload(sealed: try seal(paymentJSON))), amount: 150_000_000), key: me, title: "Payment Received", body: "1.5 KAS from Alice", record: "message:" + paymentJSON),
            Row(name: "payment, KaChat pay:", push: kasia(.payment, from: bob, Hex.encode(KasiaPayload.paymentPayload(sealed: try seal("{}"), variant: .pay)), amount: 20_000_000), key: me, title: "Payment Received", body: "0.2 KAS from \(bobShort)", record: "message:{}"),
            Row(name: "payment, null payload, one sompi", push: kasia(.payment, nil, amount: 1), key: me, title: "Payment Received", body: "0.00000001 KAS from Alice", record: "pending"),
            Row(name: "payment, wrong key", push: kasia(.payment, Hex.encode(KasiaPayload.paymentPayload(sealed: try seal(paymentJSON, to: try cipher.address(of: stranger)))), amount: 100_000_000), key: me, title: "Payment Received", body: "1 KAS from Alice", record: "pending"),
            Row(name: "payment, no amount", push: kasia(.payment, nil), key: me, title: "Payment Received", body: "Payment from Alice", record: "pending"),
            Row(name: "GhostTalk session", push: try HeraldPush(json: Data(#"{"aps":{"alert":{"title":"New Message","body":"You have a new message"}},"session_id":"s","message_id":"m"}"#.utf8)), key: me, title: "New Message", body: "You have a new message", record: nil),
            Row(name: "Claudiator agent event", push: try HeraldPush(json: Data(#"{"aps":{"alert":{"title":"Claude is waiting","body":"Session idle on mac"}},"session_id":"s","device_name":"mac","event_type":"Stop"}"#.utf8)), key: me, title: "Claude is waiting", body: "Session idle on mac", record: nil),
            Row(name: "SafeWhisper silent", push: .conversation(ConversationPush(conversationHash: "00")), key: me, title: "", body: "", record: nil),
        ])
    }

    @Test func theTable() throws {
        let resolver = try NotificationContentResolver(cipher: cipher)
        let (contacts, rows) = try table()
        #expect(rows.count >= 20)
        for row in rows {
            let outcome = resolver.resolve(row.push, contacts: contacts, privateKey: row.key)
            #expect(outcome.title == row.title, "\(row.name)")
            #expect(outcome.body == row.body, "\(row.name)")
            let record: String? =
                switch outcome.record {
                case .message(let m)?: "message:" + m.plaintext
                case .pendingFetch?: "pending"
                case nil: nil
                }
            #expect(record == row.record, "\(row.name)")
            if case .kasia(let push) = row.push, let stored = outcome.record {
                let (txID, sender): (String, String) =
                    switch stored {
                    case .message(let m): (m.txID, m.sender)
                    case .pendingFetch(let p): (p.txID, p.sender)
                    }
                #expect(txID == push.txID && sender == push.sender, "\(row.name)")
            }
        }
    }

    @Test("a push of an app with privacy: minimal names no sender: the contact is found by the message's alias, else the record waits for the fetched transaction")
    func minimalPrivacy() throws {
        let resolver = try NotificationContentResolver(cipher: cipher)
        let me = try cipher.randomPrivateKey()
        let alice = try cipher.address(of: cipher.randomPrivateKey()).string
        let contacts = [Contact(address: alice, name: "Alice", aliases: ["a1b2c3d4e5f6"])]
        func push(_ kind: KasiaPush.Kind, _ payload: [UInt8]?) throws -> KasiaPush {
            // Decoded as it arrives: the JSON Herald renders under .minimal, with no sender.
            let json = #"{"aps":{"alert":{"title":"New message"},"mutable-content":1},"kasia":{"type":"\#(kind.rawValue)","txId":"tx1","payload":\#(payload.map { "\"\(Hex.encode($0))\"" } ?? "null"),"timestamp":1750000000,"daaScore":9}}"#
            guard case .kasia(let push) = try HeraldPush(json: Data(json.utf8)) else { throw CancellationError() }
            #expect(push.sender == nil)
            return push
        }
        let sealed = try cipher.encrypt("Hey!", to: cipher.address(of: me))
        let known = resolver.resolve(try push(.contextualMessage, KasiaPayload.contextualMessagePayload(alias: "a1b2c3d4e5f6", sealed: sealed)), contacts: contacts, privateKey: me)
        #expect(known.title == "Alice" && known.body == "Hey!")
        #expect(known.record == .message(StoredMessage(txID: "tx1", sender: alice, kind: "contextual_message", plaintext: "Hey!", timestamp: 1_750_000_000)))
        let stranger = resolver.resolve(try push(.contextualMessage, KasiaPayload.contextualMessagePayload(alias: "ffffffffffff", sealed: sealed)), contacts: contacts, privateKey: me)
        #expect(stranger.title == "Someone" && stranger.body == "Hey!")
        #expect(stranger.record == .message(StoredMessage(txID: "tx1", sender: "", kind: "contextual_message", plaintext: "Hey!", timestamp: 1_750_000_000)))
        let payment = resolver.resolve(try push(.payment, nil), contacts: contacts, privateKey: me)
        #expect(payment.title == "Payment Received" && payment.body == "Payment from Someone")
        #expect(payment.record == .pendingFetch(PendingFetch(txID: "tx1", sender: "", kind: "payment", timestamp: 1_750_000_000)))
        // Contacts stored before aliases were kept still decode.
        let old = try JSONDecoder().decode(Contact.self, from: Data(#"{"address":"\#(alice)","name":"Alice"}"#.utf8))
        #expect(old == Contact(address: alice, name: "Alice"))
    }
}
