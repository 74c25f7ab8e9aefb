import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldCore
import HeraldPushCore
import KasiaProtocol
import Testing

@Suite("kasia.* templates")
struct KasiaTemplateTests {
    static let sender = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"
    static let txID = "0f4c2d9e8b7a6f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6"

    static func event(_ kind: KasiaEvent.Kind, payloadHex: String? = "636970685f6d73673a", amount: UInt64? = nil,
                      sender: String = sender) -> KasiaEvent {
        KasiaEvent(kind: kind, txID: txID, sender: sender, payloadHex: payloadHex, timestamp: 1_704_067_200,
                   daaScore: 12_345_678, amount: amount)
    }

    @Test("exact payloads for a message, a handshake and a payment", arguments: [
        (event(.contextualMessage),
         #"{"aps":{"alert":{"title":"New Message","body":"From kaspa:qp...70xmfj"},"mutable-content":1,"content-available":1,"sound":"default","category":"kasia.message","thread-id":"\#(sender)"},"kasia":{"type":"contextual_message","txId":"\#(txID)","sender":"\#(sender)","payload":"636970685f6d73673a","timestamp":1704067200,"daaScore":12345678}}"#),
        (event(.handshake),
         #"{"aps":{"alert":{"title":"New Contact Request","body":"From kaspa:qp...70xmfj"},"mutable-content":1,"content-available":1,"sound":"default","category":"kasia.handshake","thread-id":"\#(sender)"},"kasia":{"type":"handshake","txId":"\#(txID)","sender":"\#(sender)","payload":"636970685f6d73673a","timestamp":1704067200,"daaScore":12345678}}"#),
        (event(.payment, amount: 1_050_000_000),
         #"{"aps":{"alert":{"title":"Payment Received","body":"10.5 KAS from kaspa:qp...70xmfj"},"mutable-content":1,"content-available":1,"sound":"default","category":"kasia.payment","thread-id":"\#(sender)"},"kasia":{"type":"payment","txId":"\#(txID)","sender":"\#(sender)","payload":"636970685f6d73673a","timestamp":1704067200,"daaScore":12345678,"amount":1050000000}}"#),
    ])
    func exact(event: KasiaEvent, json: String) throws {
        let push = KasiaTemplate.render(event)
        #expect(String(decoding: push.payload, as: UTF8.self) == json)
        #expect(push.collapseID == Self.txID)
        #expect(push.pushType == .alert && push.priority == .immediate)
        // Apple would take it.
        try APNsNotification(deviceToken: String(repeating: "ab", count: 32), topic: "com.kasia.app",
                             collapseID: push.collapseID, payload: push.payload).validate()
    }

    @Test("privacy: minimal — what Apple, Google or a Web Push service reads is the txid, the kind, the encrypted payload, the time and a generic alert: no sender, amount or thread id", arguments: KasiaEvent.Kind.allCases)
    func minimal(kind: KasiaEvent.Kind) throws {
        let push = KasiaTemplate.render(Self.event(kind, amount: kind == .payment ? 1_050_000_000 : nil), privacy: .minimal)
        let json = String(decoding: push.payload, as: UTF8.self)
        #expect(json == #"{"aps":{"alert":{"title":"New message"},"mutable-content":1,"content-available":1,"sound":"default","category":"\#(kind.notificationCategory)"},"kasia":{"type":"\#(kind.rawValue)","txId":"\#(Self.txID)","payload":"636970685f6d73673a","timestamp":1704067200,"daaScore":12345678}}"#)
        for secret in [Self.sender, String(Self.sender.dropFirst("kaspa:".count).prefix(10)), "70xmfj", "1050000000", "10.5", "thread-id"] {
            #expect(!json.contains(secret), "\(secret)")
        }
        try APNsNotification(deviceToken: String(repeating: "ab", count: 32), topic: "com.kasia.app",
                             collapseID: push.collapseID, payload: push.payload).validate()
    }

    @Test("the payload is inline at 3,500 characters and null at 3,502")
    func inlineLimit() throws {
        let at = KasiaTemplate.render(Self.event(.contextualMessage, payloadHex: String(repeating: "ab", count: 1_750)))
        let over = KasiaTemplate.render(Self.event(.contextualMessage, payloadHex: String(repeating: "ab", count: 1_751)))
        #expect(try Self.kasia(at)["payload"] as? String == String(repeating: "ab", count: 1_750))
        #expect(try Self.kasia(over)["payload"] is NSNull)
        #expect(at.payload.count <= 4_096)
    }

    @Test("the payload is null whenever the push would pass 4,096 bytes")
    func wholePushLimit() throws {
        // A sender long enough that 3,500 characters of payload no longer fit.
        let longSender = "kaspa:" + String(repeating: "q", count: 300)
        let push = KasiaTemplate.render(Self.event(.contextualMessage, payloadHex: String(repeating: "ab", count: 1_750), sender: longSender))
        #expect(try Self.kasia(push)["payload"] is NSNull)
        #expect(push.payload.count <= 4_096)
    }

    @Test("KAS amounts keep up to 8 decimals, trailing zeros trimmed", arguments: [
        (UInt64(0), "0"), (1, "0.00000001"), (100_000_000, "1"), (150_000_000, "1.5"), (20_000_000, "0.2"),
        (123_456_789_012, "1234.56789012"), (UInt64.max, "184467440737.09551615"),
    ])
    func amounts(sompi: UInt64, text: String) {
        #expect(KasiaText.kas(sompi: sompi) == text)
    }

    @Test("short addresses: first 8 characters, ..., last 6")
    func shortAddress() {
        #expect(KasiaText.shortAddress(Self.sender) == "kaspa:qp...70xmfj")
        #expect(KasiaText.shortAddress("kaspa:short") == "kaspa:short")
    }

    @Test("a payment without an amount still says who paid")
    func paymentWithoutAmount() {
        #expect(KasiaTemplate.alert(for: Self.event(.payment)) == ("Payment Received", "From kaspa:qp...70xmfj"))
    }

    static func kasia(_ push: RenderedPush) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(push.payload)) as? [String: Any]
        return try #require(object?["kasia"] as? [String: Any])
    }
}

@Suite("JSON writer")
struct JSONValueTests {
    @Test("strings are escaped as JSON requires")
    func escaping() throws {
        let value = JSONValue.object([.init("k\"ey", .string("a\\b\n\t\u{01}é/"))])
        let text = String(decoding: value.encoded, as: UTF8.self)
        #expect(text == #"{"k\"ey":"a\\b\n\t\u0001é/"}"#)
        let parsed = try JSONSerialization.jsonObject(with: Data(value.encoded)) as? [String: String]
        #expect(parsed == ["k\"ey": "a\\b\n\t\u{01}é/"])
    }
}
