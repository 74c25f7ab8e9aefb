import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldFCMCore
import HeraldPushCore
import Testing

@testable import HeraldMatrix

/// Sygnal's own test notification (tests/testutils.py) and the payloads its tests expect
/// (tests/test_apns.py, test_gcm.py, test_webpush.py): Herald's must be the same documents.
private func sygnalNotification(devices: [MatrixNotification.Device], type: String? = "m.room.message") -> MatrixNotification {
    MatrixNotification(
        eventID: "$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs", roomID: "!slw48wfj34rtnrf:example.com", type: type,
        sender: "@exampleuser:matrix.org", senderDisplayName: "Major Tom", roomName: "Mission Control",
        roomAlias: "#exampleroom:matrix.org", prio: "high",
        content: .object([.init("msgtype", .string("m.text")), .init("body", .string("I'm floating in a most peculiar way.")), .init("other", .int(1))]),
        counts: .init(unread: 2, missedCalls: 1), devices: devices)
}

private let apnsApp = MatrixApp(pattern: "com.example.apns", app: "element", kind: .apns)
private let device = MatrixNotification.Device(appID: "com.example.apns", pushkey: "spqr", pushkeyTS: 42)
private let defaultPayload: JSONValue = .object([
    .init("default_payload", .object([.init("aps", .object([
        .init("mutable-content", .int(1)), .init("alert", .object([.init("loc-key", .string("SINGLE_UNREAD")), .init("loc-args", .array([]))])),
    ]))]))
])

/// A payload as a Foundation object, for comparison whatever the key order, less the
/// `"herald_source":"matrix"` every document a notify makes must carry (checked here).
private func object(_ bytes: [UInt8]) throws -> NSDictionary {
    let parsed = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    #expect(parsed["herald_source"] as? String == "matrix", "\(String(decoding: bytes, as: UTF8.self))")
    return parsed.filter { $0.key != "herald_source" } as NSDictionary
}

/// An FCM data map less its `herald_source` (checked: `matrix`).
private func data(_ map: [String: String]?) -> [String: String]? {
    #expect(map?["herald_source"] == "matrix")
    return map?.filter { $0.key != "herald_source" }
}

private func object(_ json: String) throws -> NSDictionary {
    try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? NSDictionary)
}

@Suite("Matrix payloads: Sygnal's documents, so existing clients decode them")
struct MatrixPushBuilderTests {
    @Test("APNs full format: loc-key and loc-args from the event, badge = unread + missed calls")
    func apnsFull() throws {
        let push = try #require(MatrixPushBuilder.apns(sygnalNotification(devices: [device]), device: device, app: apnsApp))
        #expect(try object(push.payload) == object("""
            {"room_id":"!slw48wfj34rtnrf:example.com","event_id":"$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs",
             "aps":{"alert":{"loc-key":"MSG_FROM_USER_IN_ROOM_WITH_CONTENT","loc-args":["Major Tom","Mission Control","I'm floating in a most peculiar way."]},"badge":3}}
            """))
        #expect(push.pushType == .alert && push.priority == .immediate)
    }

    @Test("APNs full format with a default payload: merged under the alert")
    func apnsFullWithDefaultPayload() throws {
        let d = MatrixNotification.Device(appID: "com.example.apns", pushkey: "spqr", pushkeyTS: 42, data: defaultPayload)
        let push = try #require(MatrixPushBuilder.apns(sygnalNotification(devices: [d]), device: d, app: apnsApp))
        #expect(try object(push.payload) == object("""
            {"room_id":"!slw48wfj34rtnrf:example.com","event_id":"$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs",
             "aps":{"alert":{"loc-key":"MSG_FROM_USER_IN_ROOM_WITH_CONTENT","loc-args":["Major Tom","Mission Control","I'm floating in a most peculiar way."]},
                    "badge":3,"mutable-content":1}}
            """))
    }

    @Test("APNs event_id_only: the default payload, the ids and the unread count")
    func apnsEventIDOnly() throws {
        var data = defaultPayload.objectFields!
        data.append(.init("format", .string("event_id_only")))
        let d = MatrixNotification.Device(appID: "com.example.apns", pushkey: "spqr", data: .object(data))
        let n = MatrixNotification(
            eventID: "$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs", roomID: "!slw48wfj34rtnrf:example.com", counts: .init(unread: 2),
            devices: [d])
        let push = try #require(MatrixPushBuilder.apns(n, device: d, app: apnsApp))
        #expect(try object(push.payload) == object("""
            {"room_id":"!slw48wfj34rtnrf:example.com","event_id":"$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs","unread_count":2,
             "aps":{"alert":{"loc-key":"SINGLE_UNREAD","loc-args":[]},"mutable-content":1}}
            """))
    }

    @Test("APNs badge-only (a read receipt): the badge alone, no default payload")
    func apnsBadgeOnly() throws {
        let d = MatrixNotification.Device(appID: "com.example.apns", pushkey: "spqr", data: defaultPayload)
        let n = MatrixNotification(sender: "", counts: .init(unread: 2), devices: [d])
        #expect(n.isBadgeOnly)
        let push = try #require(MatrixPushBuilder.apns(n, device: d, app: apnsApp))
        #expect(try object(push.payload) == object(#"{"aps":{"badge":2}}"#))
    }

    @Test("APNs: an event_id_only push with nothing to show is a background push (content-available, priority 5)")
    func apnsBackground() throws {
        let d = MatrixNotification.Device(appID: "a", pushkey: "spqr", data: .object([.init("format", .string("event_id_only"))]))
        let n = MatrixNotification(eventID: "$e", roomID: "!r:x", counts: .init(unread: 1), devices: [d])
        let push = try #require(MatrixPushBuilder.apns(n, device: d, app: apnsApp))
        #expect(push.pushType == .background && push.priority == .considerate)
        #expect(try object(push.payload) == object(#"{"room_id":"!r:x","event_id":"$e","unread_count":1,"aps":{"content-available":1}}"#))
    }

    @Test("APNs loc-keys by event type, as Sygnal chooses them", arguments: [
        ("m.room.message", JSONValue.object([.init("msgtype", .string("m.image")), .init("body", .string("cat.jpg"))]), "Room", "IMAGE_FROM_USER_IN_ROOM", ["Tom", "cat.jpg", "Room"]),
        ("m.room.message", .object([.init("msgtype", .string("m.emote")), .init("body", .string("waves"))]), "Room", "ACTION_FROM_USER_IN_ROOM", ["Room", "Tom", "waves"]),
        ("m.room.message", .object([.init("msgtype", .string("m.text")), .init("body", .string("hi"))]), nil, "MSG_FROM_USER_WITH_CONTENT", ["Tom", "hi"]),
        ("m.room.message", .object([.init("msgtype", .string("m.image")), .init("body", .string("a.png"))]), nil, "IMAGE_FROM_USER", ["Tom", "a.png"]),
        ("m.room.message", .object([.init("msgtype", .string("m.emote")), .init("body", .string("waves"))]), nil, "ACTION_FROM_USER", ["Tom", "waves"]),
        ("m.room.message", .null, nil, "MSG_FROM_USER", ["Tom"]),
        ("m.room.message", .null, "Room", "MSG_FROM_USER_IN_ROOM", ["Tom", "Room"]),
        ("m.call.invite", .object([.init("offer", .object([.init("sdp", .string("v=0\r\nm=video 9 UDP"))]))]), nil, "VIDEO_CALL_FROM_USER", ["Tom"]),
        ("m.call.invite", .object([.init("offer", .object([.init("sdp", .string("v=0\r\nm=audio 9 UDP"))]))]), nil, "VOICE_CALL_FROM_USER", ["Tom"]),
        ("m.something.new", .null, "Room", "MSG_FROM_USER", ["Tom"]),
    ] as [(String, JSONValue, String?, String, [String])])
    func apnsLocKeys(type: String, content: JSONValue, room: String?, locKey: String, locArgs: [String]) throws {
        let n = MatrixNotification(eventID: "$e", roomID: "!r:x", type: type, sender: "@tom:x", senderDisplayName: "Tom", roomName: room,
            content: content == .null ? nil : content, devices: [device])
        let push = try #require(MatrixPushBuilder.apns(n, device: device, app: apnsApp))
        let root = try object(push.payload)
        let alert = try #require((root["aps"] as? NSDictionary)?["alert"] as? NSDictionary)
        #expect(alert["loc-key"] as? String == locKey)
        #expect(alert["loc-args"] as? [String] == locArgs)
    }

    @Test("APNs invites: to a named room, to a chat; not for someone else's membership")
    func apnsInvites() throws {
        let named = MatrixNotification(eventID: "$e", roomID: "!r:x", type: "m.room.member", sender: "@tom:x", roomAlias: "#space:x",
            membership: "invite", userIsTarget: true, devices: [device])
        let alert = try object(MatrixPushBuilder.apns(named, device: device, app: apnsApp)!.payload)["aps"] as? NSDictionary
        #expect((alert?["alert"] as? NSDictionary)?["loc-key"] as? String == "USER_INVITE_TO_NAMED_ROOM")
        #expect((alert?["alert"] as? NSDictionary)?["loc-args"] as? [String] == ["@tom:x", "#space:x"])
        var chat = named
        chat.roomAlias = nil
        #expect(try object(MatrixPushBuilder.apns(chat, device: device, app: apnsApp)!.payload).description.contains("USER_INVITE_TO_CHAT"))
        var other = named
        other.userIsTarget = false
        #expect(MatrixPushBuilder.apns(other, device: device, app: apnsApp) == nil, "no loc-key and no counts: nothing to push")
    }

    @Test("APNs prio low: priority 5")
    func apnsLowPriority() throws {
        var n = sygnalNotification(devices: [device])
        n.prio = "low"
        #expect(MatrixPushBuilder.apns(n, device: device, app: apnsApp)?.priority == .considerate)
    }

    @Test("APNs: a long message is cut to fit 4,096 bytes, the longest text first, whole characters")
    func apnsTruncation() throws {
        var n = sygnalNotification(devices: [device])
        n.content = .object([.init("msgtype", .string("m.text")), .init("body", .string(String(repeating: "é🙂", count: 2_000)))])
        let push = try #require(MatrixPushBuilder.apns(n, device: device, app: apnsApp))
        #expect(push.payload.count <= 4_096 && push.payload.count > 3_900)
        let args = try #require(((try object(push.payload)["aps"] as? NSDictionary)?["alert"] as? NSDictionary)?["loc-args"] as? [String])
        #expect(args[0] == "Major Tom" && args[1] == "Mission Control")
        #expect(args[2].hasPrefix("é🙂é🙂") && String(repeating: "é🙂", count: 2_000).hasPrefix(args[2]))
        // As Sygnal's test_payload_truncation does with 240 bytes.
        let small = try #require(MatrixPushBuilder.fitted(MatrixPushBuilder.fullAPNs(n, device: device)!, limit: 240))
        #expect(small.count <= 240)
    }

    @Test("Privacy: an encrypted room's event carries only ids and counts unless the app asks for more")
    func encryptedRoom() throws {
        let n = sygnalNotification(devices: [device], type: "m.room.encrypted")
        let push = try #require(MatrixPushBuilder.apns(n, device: device, app: apnsApp))
        #expect(try object(push.payload) == object("""
            {"room_id":"!slw48wfj34rtnrf:example.com","event_id":"$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs","unread_count":2,"missed_calls":1,
             "aps":{"badge":3}}
            """))
        let text = String(decoding: push.payload, as: UTF8.self)
        #expect(!text.contains("Major Tom") && !text.contains("Mission Control") && !text.contains("floating"))
        var open = apnsApp
        open.encryptedRoomDetails = true
        #expect(String(decoding: MatrixPushBuilder.apns(n, device: device, app: open)!.payload, as: UTF8.self).contains("Major Tom"))
        let fcm = try #require(MatrixPushBuilder.fcm(n, device: device, app: MatrixApp(pattern: "a", app: "b", kind: .fcm)))
        #expect(data(fcm.fcmData) == ["event_id": n.eventID!, "room_id": n.roomID!, "prio": "high", "unread": "2", "missed_calls": "1"])
        let web = try #require(MatrixPushBuilder.webPush(n, device: device, app: MatrixApp(pattern: "a", app: "b", kind: .webpush)))
        #expect(try object(web.payload) == object(#"{"room_id":"!slw48wfj34rtnrf:example.com","event_id":"$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs","unread":2,"missed_calls":1}"#))
    }

    @Test("FCM v1 data: Sygnal's keys, content flattened to content_<key>, counts as strings, every value a string")
    func fcmData() throws {
        let d = MatrixNotification.Device(appID: "com.example.gcm", pushkey: "spqr", data: .object([
            .init("default_payload", .object([.init("tag", .string("x")), .init("n", .int(3))]))
        ]))
        let push = try #require(MatrixPushBuilder.fcm(sygnalNotification(devices: [d]), device: d, app: MatrixApp(pattern: "x", app: "y", kind: .fcm)))
        #expect(data(push.fcmData) == [
            "tag": "x", "n": "3",
            "event_id": "$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs", "type": "m.room.message", "sender": "@exampleuser:matrix.org",
            "room_name": "Mission Control", "room_alias": "#exampleroom:matrix.org", "sender_display_name": "Major Tom",
            "room_id": "!slw48wfj34rtnrf:example.com", "content_msgtype": "m.text", "content_body": "I'm floating in a most peculiar way.",
            "prio": "high", "unread": "2", "missed_calls": "1",
        ])
        #expect(push.priority == .immediate && push.pushType == .alert)
    }

    @Test("event_id_only on FCM and Web Push too: ids and counts, whatever the homeserver sent")
    func eventIDOnlyEverywhere() throws {
        let d = MatrixNotification.Device(appID: "x", pushkey: "k", data: .object([.init("format", .string("event_id_only"))]))
        let n = sygnalNotification(devices: [d])
        let fcm = try #require(MatrixPushBuilder.fcm(n, device: d, app: MatrixApp(pattern: "x", app: "y", kind: .fcm)))
        #expect(data(fcm.fcmData) == ["event_id": n.eventID!, "room_id": n.roomID!, "prio": "high", "unread": "2", "missed_calls": "1"])
        let web = try #require(MatrixPushBuilder.webPush(n, device: d, app: MatrixApp(pattern: "x", app: "y", kind: .webpush)))
        #expect(!String(decoding: web.payload, as: UTF8.self).contains("Major Tom"))
    }

    @Test("FCM: a field over 1,024 bytes ends in …; the whole map stays within FCM's 4,096 bytes")
    func fcmLimits() throws {
        var n = sygnalNotification(devices: [device])
        n.roomName = String(repeating: "ж", count: 1_000)
        n.content = .object(["a", "b", "c", "d"].map { .init($0, .string(String(repeating: $0, count: 900 + Int($0.unicodeScalars.first!.value)))) })
        let data = try #require(MatrixPushBuilder.fcm(n, device: device, app: MatrixApp(pattern: "x", app: "y", kind: .fcm))?.fcmData)
        #expect(data["room_name"]!.utf8.count <= 1_024 && data["room_name"]!.hasSuffix("…"))
        #expect(FCMMessage.dataBytes(of: data) <= FCMMessage.maximumDataBytes)
        #expect(data["content_a"] != nil && data["content_d"] == nil, "content dropped, largest first, until it fits")
        #expect(data["event_id"] == n.eventID)
    }

    @Test("a pusher's default_payload cannot carry kasia or herald_* keys: Herald signs the document and marks it as Matrix's, on every service")
    func reservedKeys() throws {
        let forged: JSONValue = .object([.init("default_payload", .object([
            .init("kasia", .object([.init("type", .string("payment")), .init("sender", .string("kaspa:qalice"))])),
            .init("herald_source", .string("kasia")), .init("herald_signature", .string("x")), .init("keep", .int(1)),
        ])), .init("format", .string("event_id_only"))])
        let n = sygnalNotification(devices: [])
        for (kind, build) in [
            (MatrixApp.Kind.apns, MatrixPushBuilder.apns), (.fcm, MatrixPushBuilder.fcm), (.webpush, MatrixPushBuilder.webPush),
        ] as [(MatrixApp.Kind, (MatrixNotification, MatrixNotification.Device, MatrixApp) -> RenderedPush?)] {
            let d = MatrixNotification.Device(appID: "a", pushkey: "k", data: forged)
            let push = try #require(build(n, d, MatrixApp(pattern: "a", app: "y", kind: kind)), "\(kind)")
            let document = try #require(try JSONSerialization.jsonObject(with: Data(push.payload)) as? [String: Any])
            #expect(document["kasia"] == nil && document["herald_signature"] == nil, "\(kind): \(document)")
            #expect(document["herald_source"] as? String == "matrix", "\(kind)")
            #expect(document["keep"] != nil, "\(kind): the pusher's other keys stay, as Sygnal keeps them")
        }
    }

    @Test("Web Push: Sygnal's fields; only_last_per_room gives the room's pushes one Topic; events_only skips badge updates")
    func webPush() throws {
        let app = MatrixApp(pattern: "w", app: "y", kind: .webpush)
        let d = MatrixNotification.Device(appID: "w", pushkey: "k", data: .object([.init("only_last_per_room", .bool(true))]))
        let push = try #require(MatrixPushBuilder.webPush(sygnalNotification(devices: [d]), device: d, app: app))
        #expect(try object(push.payload) == object("""
            {"room_id":"!slw48wfj34rtnrf:example.com","room_name":"Mission Control","room_alias":"#exampleroom:matrix.org",
             "event_id":"$qTOWWTEL48yPm3uT-gdNhFcoHxfKbZuqRVnnWWSkGBs","sender":"@exampleuser:matrix.org","sender_display_name":"Major Tom",
             "type":"m.room.message","content":{"msgtype":"m.text","body":"I'm floating in a most peculiar way.","other":1},"unread":2,"missed_calls":1}
            """))
        #expect(push.collapseID == "!slw48wfj34rtnrf:example.com")
        let eventsOnly = MatrixNotification.Device(appID: "w", pushkey: "k", data: .object([.init("events_only", .bool(true))]))
        #expect(MatrixPushBuilder.webPush(MatrixNotification(counts: .init(unread: 1), devices: [eventsOnly]), device: eventsOnly, app: app) == nil)
    }
}

@Suite("Matrix app ids and pushkeys")
struct MatrixAppsTests {
    @Test("an exact app_id wins over a glob; globs in order")
    func matching() {
        let apps = MatrixApps([
            MatrixApp(pattern: "im.vector.*", app: "a", kind: .fcm), MatrixApp(pattern: "im.vector.app.ios", app: "b", kind: .apns),
            MatrixApp(pattern: "im.*", app: "c", kind: .webpush), MatrixApp(pattern: "org.?x", app: "d", kind: .fcm),
        ])
        #expect(apps.app(for: "im.vector.app.ios")?.app == "b")
        #expect(apps.app(for: "im.vector.app.android")?.app == "a")
        #expect(apps.app(for: "im.other")?.app == "c")
        #expect(apps.app(for: "org.ax")?.app == "d")
        #expect(apps.app(for: "org.abx") == nil)
        #expect(apps.app(for: "com.example") == nil)
        #expect(Glob.matches("*a*b*c", "xxaxxbxxc") && !Glob.matches("*a*b*c", "xxaxxbxx"))
    }

    @Test("APNs pushkeys are base64 turned into hex (or hex as configured); malformed ones are refused")
    func apnsPushkeys() throws {
        let raw = (0..<32).map { UInt8($0 * 7 % 256) }
        let base64 = Data(raw).base64EncodedString()
        let hex = raw.map { String(format: "%02x", $0) }.joined()
        let app = MatrixApp(pattern: "a", app: "b", kind: .apns)
        #expect(try app.token(of: .init(appID: "a", pushkey: base64)).0.value == hex)
        #expect(try app.token(of: .init(appID: "a", pushkey: String(base64.dropLast()))).0.value == hex, "padding may be left off")
        #expect(throws: MatrixPushkeyRefusal.self) { try app.token(of: .init(appID: "a", pushkey: "spqr")) }
        #expect(throws: MatrixPushkeyRefusal.self) { try app.token(of: .init(appID: "a", pushkey: "not base64 !")) }
        var hexApp = app
        hexApp.convertTokenToHex = false
        #expect(try hexApp.token(of: .init(appID: "a", pushkey: hex.uppercased())).0.value == hex)
    }

    @Test("FCM tokens as FCM takes them; Web Push needs endpoint and auth, on an allowed host")
    func otherPushkeys() throws {
        let fcm = MatrixApp(pattern: "a", app: "b", kind: .fcm)
        #expect(try fcm.token(of: .init(appID: "a", pushkey: "abc:DEF_123")).0.platform == .android)
        #expect(throws: MatrixPushkeyRefusal.self) { try fcm.token(of: .init(appID: "a", pushkey: "has space")) }
        let web = MatrixApp(pattern: "w", app: "b", kind: .webpush, allowedEndpoints: ["*.push.example.org"])
        let p256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        let auth = "BTBZMqHH6r4Tts7J_aSIgg"
        func device(_ endpoint: String?, auth: String? = auth) -> MatrixNotification.Device {
            var data: [JSONValue.Field] = []
            if let endpoint { data.append(.init("endpoint", .string(endpoint))) }
            if let auth { data.append(.init("auth", .string(auth))) }
            return .init(appID: "w", pushkey: p256dh, data: .object(data))
        }
        let (token, keys) = try web.token(of: device("https://a.push.example.org/send/abc"))
        #expect(token.value == "https://a.push.example.org/send/abc" && keys != nil)
        #expect(throws: MatrixPushkeyRefusal.self) { try web.token(of: device("https://evil.example.com/send/abc")) }
        #expect(throws: MatrixPushkeyRefusal.self) { try web.token(of: device(nil)) }
        #expect(throws: MatrixPushkeyRefusal.self) { try web.token(of: device("https://a.push.example.org/x", auth: nil)) }
        #expect(throws: MatrixPushkeyRefusal.self) { try web.token(of: device("http://a.push.example.org/x")) }
    }
}
