import Foundation
import HeraldKit
import KasiaProtocol
import Testing

@Suite struct KasiaPayloadTests {
    static let sealed = Array(0..<12) + [UInt8(2)] + [UInt8](repeating: 7, count: 32) + Array("ciphertext".utf8) + [UInt8](repeating: 9, count: 16)

    @Test(arguments: [
        ("ciph_msg:1:handshake:", "handshake"),
        ("ciph_msg:1:payment:", "payment"),
        ("ciph_msg:1:pay:", "pay"),
        ("ciph_msg:", "legacy"),
        ("ciph_msg:1:self_stash:saved_handshake:", "stash:saved_handshake"),
        ("ciph_msg:1:self_stash:", "stash"),
    ])
    func everyPrefixOfTheProtocol(prefix: String, expected: String) throws {
        let payload = try #require(KasiaPayload(Array(prefix.utf8) + Self.sealed))
        let kind: String =
            switch payload {
            case .handshake: "handshake"
            case .payment(_, .payment): "payment"
            case .payment(_, .pay): "pay"
            case .legacy: "legacy"
            case .selfStash(let scope, _): scope.map { "stash:\($0)" } ?? "stash"
            default: "other"
            }
        #expect(kind == expected)
        #expect(payload.sealed == Self.sealed)
    }

    @Test func contextualMessagesTakeBase64OrHexBodies() throws {
        let base64 = KasiaPayload.contextualMessagePayload(alias: "20f9260eb781", sealed: Self.sealed)
        let parsed = try #require(KasiaPayload(base64))
        #expect(parsed == .contextualMessage(alias: "20f9260eb781", body: Array(Base64.encode(Self.sealed).utf8)))
        #expect(parsed.sealed == Self.sealed)
        // Kasia before August 2025 wrote the box as hex; an all-hex body is also valid base64.
        let hex = Array("ciph_msg:1:comm:20f9260eb781:".utf8) + Array(Hex.encode(Self.sealed).utf8)
        #expect(KasiaPayload(hex)?.sealed == Self.sealed)
        // Kasia's own test payload (src/tests/protocol.test.ts) decodes to a 65-byte box.
        let real = "636970685f6d73673a313a636f6d6d3a3230663932363065623738313a583731357435574670537a6742515a634172737570"
            + "6c5a6d64324768682f35307a6d786a41737347705839454e782b5148664d394454784b506d53506666496458624e71574154"
            + "4753754f7365776c57626167486b42593d"
        let kasia = try #require(KasiaPayload(hex: real))
        guard case .contextualMessage(let alias, _) = kasia else { Issue.record("not comm"); return }
        #expect(alias == "20f9260eb781")
        #expect(kasia.sealed?.count == 65)
    }

    @Test func broadcastsAndNonKasiaPayloads() {
        #expect(KasiaPayload(Array("ciph_msg:1:bcast:general:hello all".utf8)) == .broadcast(channel: "general", text: "hello all"))
        #expect(KasiaPayload(Array("ciph_msg:1:bcast:general:hello all".utf8))?.sealed == nil)
        for text in ["", "ciph_msg:", "hello", "ciph_msg:1:unknown:xx", "ciph_msg:1:comm:noseparator", "CIPH_MSG:1:handshake:x"] {
            #expect(KasiaPayload(Array(text.utf8)) == nil, "\(text)")
        }
        #expect(KasiaPayload(hex: "zz") == nil)
        #expect(KasiaPayload(hex: "636") == nil)
    }

    @Test func base64MatchesFoundation() {
        for n in 0..<70 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64.encode(bytes) == Data(bytes).base64EncodedString())
            #expect(Base64.decode(Array(Data(bytes).base64EncodedString().utf8)) == bytes)
        }
        #expect(Base64.decode(Array("abc".utf8)) == nil)
        #expect(Base64.decode(Array("ab!d".utf8)) == nil)
    }
}

@Suite struct HeraldPushDecodingTests {
    @Test func kasiaFromJSONAndFromUserInfo() throws {
        let json = #"{"aps":{"alert":{"title":"Payment Received","body":"1.5 KAS from kaspa:qp...70xmfj"},"mutable-content":1,"content-available":1,"thread-id":"kaspa:qp"},"kasia":{"type":"payment","txId":"ab12","sender":"kaspa:qp","payload":null,"timestamp":1704067200,"daaScore":18446744073709551615,"amount":150000000}}"#
        let push = try HeraldPush(json: Data(json.utf8))
        let expected = KasiaPush(
            kind: .payment, txID: "ab12", sender: "kaspa:qp", payloadHex: nil, timestamp: 1_704_067_200, daaScore: .max,
            amount: 150_000_000, alert: .init(title: "Payment Received", body: "1.5 KAS from kaspa:qp...70xmfj"))
        #expect(push == .kasia(expected))
        let userInfo: [AnyHashable: Any] = [
            "aps": ["alert": ["title": "New Message", "body": "From x"]],
            "kasia": ["type": "contextual_message", "txId": "cd", "sender": "kaspa:s", "payload": "6369", "timestamp": NSNumber(value: 5), "daaScore": 7],
        ]
        #expect(HeraldPush(userInfo: userInfo) == .kasia(KasiaPush(
            kind: .contextualMessage, txID: "cd", sender: "kaspa:s", payloadHex: "6369", timestamp: 5, daaScore: 7,
            alert: .init(title: "New Message", body: "From x"))))
    }

    /// A Matrix notify's document (marked `herald_source: matrix` in the signed bytes) is a
    /// homeserver's words: never a Kasia push, whatever a pusher put in it, on any service.
    @Test func matrixDocumentsAreNeverKasia() throws {
        let forged = #"{"aps":{"alert":{"title":"Payment Received","body":"100000 KAS"}},"kasia":{"type":"payment","txId":"ab12","sender":"kaspa:qp","payload":null,"timestamp":1704067200,"daaScore":1,"amount":1},"session_id":"s","message_id":"m","herald_source":"matrix"}"#
        let alert = HeraldPush.Alert(title: "Payment Received", body: "100000 KAS")
        func shown(_ push: HeraldPush) -> HeraldPush.Alert? {
            if case .other(let custom) = push { return custom.alert }
            Issue.record("a Matrix document read as \(push)")
            return nil
        }
        #expect(shown(try HeraldPush(json: Data(forged.utf8))) == alert)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(forged.utf8)) as? [String: Any])
        #expect(shown(HeraldPush(userInfo: object)) == alert)
        let fcm = ["title": "Payment Received", "body": "100000 KAS", "herald_source": "matrix",
                   "kasia": #"{"type":"payment","txId":"ab12","sender":"kaspa:qp","timestamp":1,"daaScore":1,"amount":1}"#]
        #expect(shown(HeraldPush(fcmData: fcm)) == alert)
    }

    @Test("a custom push keeps its data, the same map from an iPhone's payload, an FCM data message and a browser's message")
    func customPushData() throws {
        let json = #"{"aps":{"alert":{"title":"Order","body":"shipped"}},"order_id":"A-17","count":3,"paid":true,"items":[{"sku":"x","n":1}],"herald_signature":"1.sig"}"#
        let expected = CustomPush(
            alert: .init(title: "Order", body: "shipped"),
            data: ["order_id": "A-17", "count": "3", "paid": "true", "items": #"[{"n":1,"sku":"x"}]"#])
        #expect(try HeraldPush(json: Data(json.utf8)) == .other(expected))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(HeraldPush(userInfo: object) == .other(expected))
        let fcm = ["title": "Order", "body": "shipped", "order_id": "A-17", "count": "3", "paid": "true", "items": #"[{"sku":"x","n":1}]"#]
        #expect(HeraldPush(fcmData: fcm) == .other(expected))
    }

    @Test func theOtherAppsPushes() throws {
        #expect(try HeraldPush(json: Data(#"{"aps":{"content-available":1},"c":"0123456789abcdef0123456789abcdef"}"#.utf8))
            == .conversation(ConversationPush(conversationHash: "0123456789abcdef0123456789abcdef")))
        let session = try HeraldPush(json: Data(#"{"aps":{"alert":{"title":"New Message","body":"You have a new message"},"badge":1},"session_id":"s1","message_id":"m1","timestamp":1700000000,"encrypted":true,"has_attachment":false}"#.utf8))
        guard case .session(let s) = session else { Issue.record("not a session push"); return }
        #expect(s.sessionID == "s1" && s.messageID == "m1" && s.timestamp == 1_700_000_000 && s.encrypted && !s.hasAttachment)
        let agent = try HeraldPush(json: Data(#"{"aps":{"alert":{"title":"Permission needed","body":"Bash on mac"},"sound":"default"},"session_id":"s2","device_name":"mac","event_type":"Notification"}"#.utf8))
        #expect(agent == .agentEvent(AgentEventPush(sessionID: "s2", deviceName: "mac", eventType: "Notification", alert: .init(title: "Permission needed", body: "Bash on mac"))))
        #expect(try HeraldPush(json: Data(#"{"aps":{"alert":"Hello"}}"#.utf8)) == .other(CustomPush(alert: .init(title: nil, body: "Hello"))))
        // A kasia dictionary missing its required keys is not a Kasia push: the app gets it as data.
        #expect(try HeraldPush(json: Data(#"{"kasia":{"type":"payment"}}"#.utf8)) == .other(CustomPush(alert: nil, data: ["kasia": #"{"type":"payment"}"#])))
        #expect(throws: HeraldPushError.notAJSONObject) { try HeraldPush(json: Data("[1]".utf8)) }
        #expect(throws: HeraldPushError.notAJSONObject) { try HeraldPush(json: Data("{".utf8)) }
    }
}
