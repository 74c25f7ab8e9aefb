import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldPushCore
import NIOCore
import Testing

@Suite("APNs payload inspection")
struct PayloadInspectorTests {
    @Test("valid payloads are summarised", arguments: [
        (#"{"aps":{"alert":"hi"}}"#, ["alert"], nil as Int?),
        (#" { "aps" : { "content-available" : 1 } , "c" : "abc" } "#, ["content-available"], 1),
        (#"{"x":[1,2,{"y":null}],"aps":{"badge":3,"sound":"default"},"z":-1.5e3}"#, ["badge", "sound"], nil),
        (#"{"aps":{"content-available":0}}"#, ["content-available"], 0),
        (#"{"aps":{"alert":{"title":"caf\u00e9 \"q\""}},"k\u0065y":true}"#, ["alert"], nil),
        (#"{"aps":{}}"#, [], nil),
    ])
    func valid(json: String, keys: [String], contentAvailable: Int?) throws {
        let summary = try APNsPayloadInspector.inspect(ByteBuffer(string: json))
        #expect(summary.apsKeys == Set(keys))
        #expect(summary.contentAvailable == contentAvailable)
    }

    @Test("malformed payloads are refused", arguments: [
        ("", APNsPayloadError.empty),
        ("[]", .notJSONObject),
        ("not json", .notJSONObject),
        (#"{"aps":{"alert":"hi"}"#, .notJSONObject),
        (#"{"aps":{"alert":"hi"}} x"#, .notJSONObject),
        (#"{"aps":{"alert":"hi",}}"#, .notJSONObject),
        (#"{"aps":{"badge":01}}"#, .notJSONObject),
        (#"{"aps":{"alert":"\x"}}"#, .notJSONObject),
        ("{\"aps\":{\"alert\":\"a\u{01}b\"}}", .notJSONObject),
        (#"{"aps":"alert"}"#, .missingAPSDictionary),
        (#"{"data":{"aps":{}}}"#, .missingAPSDictionary),
        (#"{}"#, .missingAPSDictionary),
        (String(repeating: "[", count: 100) + String(repeating: "]", count: 100), .notJSONObject),
    ])
    func invalid(json: String, error: APNsPayloadError) {
        #expect(throws: error) { try APNsPayloadInspector.inspect(ByteBuffer(string: json)) }
    }

    @Test("deep nesting inside an object is bounded, not a crash")
    func deepNesting() {
        let json = #"{"aps":{},"x":"# + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}"
        #expect(throws: APNsPayloadError.notJSONObject) { try APNsPayloadInspector.inspect(ByteBuffer(string: json)) }
    }
}

@Suite("Local validation catches what Apple rejects")
struct NotificationValidationTests {
    static let token = String(repeating: "ab", count: 32)

    static func make(
        token: String = token, topic: String = "com.example.app", type: PushType = .alert,
        priority: PushPriority = .immediate, collapseID: String? = nil, expiration: Int? = nil, payload: String
    ) -> APNsNotification {
        APNsNotification(
            deviceToken: token, topic: topic, pushType: type, priority: priority, expiration: expiration,
            collapseID: collapseID, payload: Array(payload.utf8))
    }

    static let alertPayload = #"{"aps":{"alert":"hi"}}"#

    @Test("accepted shapes")
    func accepted() throws {
        try Self.make(payload: Self.alertPayload).validate()
        try Self.make(token: String(repeating: "AB", count: 50), payload: Self.alertPayload).validate()
        try Self.make(type: .background, priority: .considerate, payload: #"{"aps":{"content-available":1},"c":"x"}"#).validate()
        try Self.make(topic: "com.example.app.voip", type: .voip, payload: #"{"aps":{}}"#).validate()
        try Self.make(collapseID: String(repeating: "c", count: 64), payload: Self.alertPayload).validate()
        // Exactly 4,096 bytes is allowed; VoIP allows 5,120.
        let body4096 = #"{"aps":{"alert":""# + String(repeating: "x", count: 4096 - 20) + #""}}"#
        #expect(body4096.utf8.count == 4096)
        try Self.make(payload: body4096).validate()
        let body5120 = #"{"aps":{"alert":""# + String(repeating: "x", count: 5120 - 20) + #""}}"#
        try Self.make(topic: "a.voip", type: .voip, payload: body5120).validate()
    }

    @Test("rejected shapes name the field and Apple's reason", arguments: [
        (make(token: "abc", payload: alertPayload), "device_token", APNsReason.badDeviceToken),
        (make(token: String(repeating: "zz", count: 32), payload: alertPayload), "device_token", .badDeviceToken),
        (make(token: String(repeating: "a", count: 65), payload: alertPayload), "device_token", .badDeviceToken),
        (make(topic: "", payload: alertPayload), "topic", .missingTopic),
        (make(collapseID: String(repeating: "c", count: 65), payload: alertPayload), "collapse_id", .badCollapseId),
        (make(expiration: -1, payload: alertPayload), "expiration", .badExpirationDate),
        (make(payload: #"{"aps":{"alert":""# + String(repeating: "x", count: 4097 - 20) + #""}}"#), "payload", .payloadTooLarge),
        (make(payload: ""), "payload", .payloadEmpty),
        (make(payload: "{oops"), "payload", .payloadEmpty),
        (make(payload: #"{"alert":"hi"}"#), "payload", .payloadEmpty),
        (make(payload: #"{"aps":{"content-available":1}}"#), "push_type", .invalidPushType),
        (make(type: .background, priority: .considerate, payload: #"{"aps":{"alert":"hi","content-available":1}}"#), "push_type", .invalidPushType),
        (make(type: .background, priority: .considerate, payload: #"{"aps":{}}"#), "push_type", .invalidPushType),
        (make(type: .background, priority: .immediate, payload: #"{"aps":{"content-available":1}}"#), "priority", .badPriority),
        (make(type: .voip, payload: #"{"aps":{}}"#), "topic", .badTopic),
        (make(type: .liveactivity, payload: #"{"aps":{}}"#), "topic", .badTopic),
    ])
    func rejected(notification: APNsNotification, field: String, reason: APNsReason) {
        #expect {
            try notification.validate()
        } throws: { error in
            let e = error as? APNsValidationError
            return e?.field == field && e?.reason == reason
        }
    }

    @Test("tokens are redacted to 8 characters in logs")
    func redaction() {
        #expect(APNsDeviceToken.redacted(Self.token) == "abababab…")
    }
}

@Suite("APNs tokens in the case Herald keeps")
struct APNsTokenCaseTests {
    @Test("a token with an uppercase letter is lowercased, any other is handed back as it is")
    func lowercased() {
        let lower = String(repeating: "ab", count: 32)
        #expect(APNsDeviceToken.lowercased(lower.uppercased()) == lower)
        #expect(APNsDeviceToken.lowercased("AB" + lower.dropFirst(2)) == lower)
        #expect(APNsDeviceToken.lowercased(String(lower.dropLast(1)) + "Z") == String(lower.dropLast(1)) + "z")
        #expect(APNsDeviceToken.lowercased(lower) == lower)
        #expect(APNsDeviceToken.lowercased("") == "")
    }
}
