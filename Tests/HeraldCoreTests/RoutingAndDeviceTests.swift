import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldAPNsService
import HeraldCore
import HeraldFCMCore
import HeraldPushCore
import HeraldWebPushCore
import KasiaProtocol
import Testing

private func address(_ byte: UInt8) -> KaspaAddress {
    try! KaspaAddress(prefix: .mainnet, version: .publicKey, payload: [UInt8](repeating: byte, count: 32))
}

@Suite("Kasia routing (docs/kasia.md)")
struct KasiaRoutingTests {
    static let a = address(0xA1)
    static let b = address(0xB2)

    static func payment(to recipient: KaspaAddress) -> KasiaEvent {
        KasiaEvent(kind: .payment, txID: "t", sender: b.string, recipient: recipient.string, timestamp: 0, daaScore: 0, amount: 1)
    }

    static func message(from sender: KaspaAddress, alias: String?) -> KasiaEvent {
        KasiaEvent(kind: .contextualMessage, txID: "t", sender: sender.string, alias: alias, timestamp: 0, daaScore: 0)
    }

    @Test("handshakes and payments reach the recipient's own addresses; watchers only without own addresses")
    func toRecipient() throws {
        let owner = try WatchSet(watched: [WatchKey.kaspaAddress(Self.b)], own: [Self.a])
        let contactOnly = try WatchSet(watched: [WatchKey.kaspaAddress(Self.a)], own: [Self.b])
        let legacy = try WatchSet(watched: [WatchKey.kaspaAddress(Self.a)])
        #expect(KasiaRouting.lookupKey(for: Self.payment(to: Self.a)) == Self.a.string)
        #expect(KasiaRouting.accepts(Self.payment(to: Self.a), watchSet: owner))
        #expect(!KasiaRouting.accepts(Self.payment(to: Self.a), watchSet: contactOnly))
        #expect(KasiaRouting.accepts(Self.payment(to: Self.a), watchSet: legacy))
        var handshake = Self.payment(to: Self.a)
        handshake.kind = .handshake
        #expect(KasiaRouting.accepts(handshake, watchSet: owner))
        #expect(!KasiaRouting.accepts(handshake, watchSet: contactOnly))
    }

    @Test("contextual messages follow the sender, filtered by the device's routes for that sender")
    func contextual() throws {
        let routeX = try WatchSet(watched: [WatchKey.kaspaAddress(Self.b)], routes: [ContextualRoute(peer: Self.b, aliases: ["x"])])
        let routeY = try WatchSet(watched: [WatchKey.kaspaAddress(Self.b)], routes: [ContextualRoute(peer: Self.b, aliases: ["y"])])
        let noRoutes = try WatchSet(watched: [WatchKey.kaspaAddress(Self.b)])
        let routeOnly = try WatchSet(watched: [WatchKey](), routes: [ContextualRoute(peer: Self.b, aliases: ["x"])])
        let other = try WatchSet(watched: [WatchKey.kaspaAddress(Self.a)])
        let fromB = Self.message(from: Self.b, alias: "x")
        #expect(KasiaRouting.lookupKey(for: fromB) == Self.b.string)
        #expect(KasiaRouting.accepts(fromB, watchSet: routeX))
        #expect(!KasiaRouting.accepts(fromB, watchSet: routeY))
        #expect(KasiaRouting.accepts(fromB, watchSet: noRoutes))
        #expect(KasiaRouting.accepts(fromB, watchSet: routeOnly))
        #expect(!KasiaRouting.accepts(fromB, watchSet: other))
        #expect(!KasiaRouting.accepts(Self.message(from: Self.b, alias: nil), watchSet: routeX))
    }
}

@Suite("Devices and watch sets")
struct DeviceTests {
    @Test("each service's token rule: APNs tokens are hex, stored lowercase; FCM tokens are opaque and bounded, an installation ID 22 base64url characters; a web token is an https endpoint")
    func tokens() throws {
        let upper = String(repeating: "AB", count: 32)
        #expect(try APNsTokenRule().token(upper).value == upper.lowercased())
        #expect(try APNsTokenRule().token(upper).description == "abababab…")
        #expect(throws: DeviceTokenError.refused("an APNs token is 64+ hexadecimal characters")) { try APNsTokenRule().token("xyz") }
        #expect(throws: DeviceTokenError.refused("token_kind fid is for android devices")) { try APNsTokenRule().token(upper, kind: .fid) }
        #expect(try FCMTokenRule().token("fcm:APA91b-token_1").value == "fcm:APA91b-token_1")
        let notFCM = DeviceTokenError.refused("an FCM token is 1 to 4096 printable ASCII characters")
        #expect(throws: notFCM) { try FCMTokenRule().token("") }
        #expect(throws: notFCM) { try FCMTokenRule().token(String(repeating: "a", count: 4_097)) }
        #expect(throws: notFCM) { try FCMTokenRule().token("has space") }
        #expect(try FCMTokenRule().token("cXyZ0123456789_-abcdeF", kind: .fid).kind == .fid)
        #expect(throws: DeviceTokenError.self) { try FCMTokenRule().token("cXyZ0123456789_-abcde!", kind: .fid) }
        #expect(try WebPushTokenRule().token("https://push.example.org/s/1").value == "https://push.example.org/s/1")
        #expect(throws: DeviceTokenError.self) { try WebPushTokenRule().token("http://push.example.org/s/1") }
    }

    @Test("watch-set limits: keys per device and aliases per route")
    func limits() throws {
        let keys = (0..<1_000).map { WatchKey.session("s\($0)") }
        _ = try WatchSet(watched: keys)
        #expect(throws: WatchSetError.tooManyKeys(limit: 1_000)) { try WatchSet(watched: keys + [.session("one-more")]) }
        #expect(throws: WatchSetError.tooManyKeys(limit: 10)) { try WatchSet(watched: Array(keys.prefix(11)), maximumKeys: 10) }
        let peer = address(1)
        _ = try ContextualRoute(peer: peer, aliases: (0..<100).map { "a\($0)" })
        #expect(throws: WatchSetError.tooManyAliases(limit: 100)) {
            try ContextualRoute(peer: peer, aliases: (0..<101).map { "a\($0)" })
        }
        #expect(throws: WatchSetError.invalidAlias("a:b")) { try ContextualRoute(peer: peer, aliases: ["a:b"]) }
        // Duplicates count once.
        #expect(try WatchSet(watched: [WatchKey.session("x"), .session("x")]).watched.count == 1)
    }
}

@Suite("Retry policy")
struct RetryPolicyTests {
    let policy = RetryPolicy()

    @Test("full jitter under an exponential ceiling capped at 10 minutes", arguments: [
        (1, 0.5, Duration.milliseconds(500)), (2, 0.5, .seconds(1)), (3, 0.999, .milliseconds(3_996)),
        (10, 1.0, .seconds(512)), (11, 1.0, .seconds(600)), (40, 1.0, .seconds(600)), (5, 0.0, .zero),
    ])
    func delays(attempt: Int, random: Double, expected: Duration) {
        #expect(policy.delay(afterAttempt: attempt, random: random) == expected)
    }

    @Test("Retry-After is a floor")
    func retryAfter() {
        #expect(policy.delay(afterAttempt: 1, retryAfter: .seconds(30), random: 0.5) == .seconds(30))
        #expect(policy.delay(afterAttempt: 12, retryAfter: .seconds(30), random: 0.5) == .seconds(300))
    }

    @Test("drawn delays stay within the ceiling")
    func bounded() {
        for attempt in 1...15 {
            let d = policy.delay(afterAttempt: attempt)
            #expect(d >= .zero && d <= .seconds(600))
        }
    }
}

@Suite("custom template")
struct CustomTemplateTests {
    static func json(_ text: String) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    @Test("the caller's aps and top-level keys, exactly, in a stable order")
    func exact() throws {
        let push = try CustomTemplate.render(
            aps: try Self.json(#"{"sound":"default","alert":{"title":"Hi","body":"There"}}"#),
            data: try Self.json(#"{"z":1,"session_id":"abc","nested":{"b":[1,2.5,true,null],"a":"é"}}"#),
            collapseID: "c1")
        #expect(String(decoding: push.payload, as: UTF8.self)
            == #"{"aps":{"alert":{"body":"There","title":"Hi"},"sound":"default"},"nested":{"a":"é","b":[1,2.5,true,null]},"session_id":"abc","z":1}"#)
        #expect(push.pushType == .alert && push.priority == .immediate && push.collapseID == "c1")
    }

    @Test("a content-available-only aps is a background push at priority 5")
    func background() throws {
        let push = try CustomTemplate.render(aps: try Self.json(#"{"content-available":1}"#))
        #expect(push.pushType == .background && push.priority == .considerate)
    }

    @Test("what Apple would refuse names the field", arguments: [
        (#"{"content-available":1}"#, nil as String?, PushType.alert, nil as PushPriority?, "fields.push_type"),
        (#"{"alert":"hi"}"#, nil, .background, nil, "fields.push_type"),
        (#"{"content-available":1}"#, nil, .background, .immediate, "priority"),
        (#""not an object""#, nil, nil, nil, "fields.aps"),
        (#"{"alert":"hi"}"#, #"{"aps":{}}"#, nil, nil, "fields.data"),
        (#"{"alert":"hi"}"#, #"[1]"#, nil, nil, "fields.data"),
        (#"{"alert":"# + "\"" + String(repeating: "x", count: 4_100) + "\"}", nil, nil, nil, "fields"),
    ])
    func refused(aps: String, data: String?, type: PushType?, priority: PushPriority?, field: String) throws {
        let apsValue = try Self.json(aps)
        let dataValue = try data.map(Self.json)
        #expect {
            try CustomTemplate.render(aps: apsValue, data: dataValue, pushType: type, priority: priority, checkedBy: [APNsPushLimits()])
        } throws: { ($0 as? TemplateError)?.field == field }
    }
}

@Suite("Token lookups")
struct TokenLookupTests {
    @Test("hex tokens are looked up lowercase; FCM tokens keep their case")
    func lookupForm() {
        #expect(DeviceToken.lookupForm("ABCDEF01") == "abcdef01")
        #expect(DeviceToken.lookupForm("fcm-Token_ABC:1") == "fcm-Token_ABC:1")
    }
}
