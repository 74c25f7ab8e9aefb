import Foundation
import HeraldCore
public import HeraldPushCore

/// The body of `POST /_matrix/push/v1/notify` (Matrix Push Gateway API, "Push Gateway API"
/// in the client-server specification): one notification for one or more pushers' devices.
public struct MatrixNotifyRequest: Sendable {
    public var notification: MatrixNotification?

    public init(notification: MatrixNotification?) {
        self.notification = notification
    }
}

/// What a homeserver says happened. Every field but `devices` is optional: a badge-only
/// notification (a read receipt) has no event, a null `type` and an empty `sender`; an
/// `event_id_only` pusher gets ids and counts only.
public struct MatrixNotification: Sendable {
    /// The member every document a notify makes carries, in the signed bytes: `"herald_source":"matrix"`.
    /// HeraldKit reads such a document as nothing but a notification's alert.
    public static let sourceKey = "herald_source"
    public static let sourceValue = "matrix"

    /// A top-level key a homeserver's data may not set: `kasia` and Herald's own `herald_*`.
    public static func isReservedKey(_ key: String) -> Bool {
        key == "kasia" || key.utf8.starts(with: "herald_".utf8)
    }

    public var eventID: String?
    public var roomID: String?
    public var type: String?
    public var sender: String?
    public var senderDisplayName: String?
    public var roomName: String?
    public var roomAlias: String?
    public var membership: String?
    public var userIsTarget: Bool?
    /// `high` or `low`.
    public var prio: String?
    public var content: JSONValue?
    public var counts: Counts?
    public var devices: [Device]?

    public init(
        eventID: String? = nil, roomID: String? = nil, type: String? = nil, sender: String? = nil, senderDisplayName: String? = nil,
        roomName: String? = nil, roomAlias: String? = nil, membership: String? = nil, userIsTarget: Bool? = nil, prio: String? = nil,
        content: JSONValue? = nil, counts: Counts? = nil, devices: [Device]?
    ) {
        self.eventID = eventID
        self.roomID = roomID
        self.type = type
        self.sender = sender
        self.senderDisplayName = senderDisplayName
        self.roomName = roomName
        self.roomAlias = roomAlias
        self.membership = membership
        self.userIsTarget = userIsTarget
        self.prio = prio
        self.content = content
        self.counts = counts
        self.devices = devices
    }

    /// The user's unread notifications and missed calls.
    public struct Counts: Sendable, Hashable {
        public var unread: Int64?
        public var missedCalls: Int64?

        public init(unread: Int64? = nil, missedCalls: Int64? = nil) {
            self.unread = unread
            self.missedCalls = missedCalls
        }
    }

    /// One pusher: its app id, its pushkey (the device's token, or a Web Push subscription's
    /// p256dh) and the pusher's `data` less its `url`.
    public struct Device: Sendable {
        public var appID: String?
        public var pushkey: String?
        /// Unix seconds: when the pusher was set.
        public var pushkeyTS: Int64?
        public var data: JSONValue?
        public var tweaks: JSONValue?

        public init(appID: String?, pushkey: String?, pushkeyTS: Int64? = nil, data: JSONValue? = nil, tweaks: JSONValue? = nil) {
            self.appID = appID
            self.pushkey = pushkey
            self.pushkeyTS = pushkeyTS
            self.data = data
            self.tweaks = tweaks
        }

        /// `data.format`: `event_id_only` or absent.
        public var format: String? { data?[path: ["format"]]?.stringValue }
        /// `data.default_payload`'s fields (absent or not an object: none), less the keys Herald's
        /// own documents use (`kasia`, `herald_*`): whoever set the pusher wrote them, and Herald
        /// signs the document, so they could pass for a Kasia push or Herald's own markers.
        public var defaultPayload: [JSONValue.Field] {
            (data?[path: ["default_payload"]]?.objectFields ?? []).filter { !MatrixNotification.isReservedKey($0.key) }
        }
        /// A `data` flag (`only_last_per_room`, `events_only`).
        public func flag(_ key: String) -> Bool { data?[path: [key]] == .bool(true) }
        /// A `data` string (`endpoint`, `auth`).
        public func string(_ key: String) -> String? { data?[path: [key]]?.stringValue }
    }

    /// Badge-only: no event (a read receipt changed the counts).
    public var isBadgeOnly: Bool { (eventID ?? "").isEmpty && type == nil }
    /// An encrypted room's event: nothing but ids and counts leaves Herald unless asked.
    public var isEncrypted: Bool { type == "m.room.encrypted" }
    /// Priority `low` (APNs 5, FCM normal, Web Push low).
    public var isLowPriority: Bool { prio == "low" }
}

extension MatrixNotifyRequest {
    /// The body from parsed JSON (`JSONValue(parsing:)`): a null field is an absent one, as
    /// everywhere in the API, and a field of the wrong type is refused naming its path.
    public init(json: JSONValue) throws(JSONFieldError) {
        let root = try JSONObjectReader(json, at: "")
        guard let value = root["notification"] else {
            notification = nil
            return
        }
        let n = try JSONObjectReader(value, at: "notification")
        var notification = MatrixNotification(
            eventID: try n.string("event_id"), roomID: try n.string("room_id"), type: try n.string("type"), sender: try n.string("sender"),
            senderDisplayName: try n.string("sender_display_name"), roomName: try n.string("room_name"), roomAlias: try n.string("room_alias"),
            membership: try n.string("membership"), userIsTarget: try n.bool("user_is_target"), prio: try n.string("prio"),
            content: n["content"], devices: nil)
        if let counts = n["counts"] {
            let c = try JSONObjectReader(counts, at: "notification.counts")
            notification.counts = .init(unread: try c.integer("unread"), missedCalls: try c.integer("missed_calls"))
        }
        if let items = try n.array("devices") {
            notification.devices = try items.enumerated().map { (i, item) throws(JSONFieldError) -> MatrixNotification.Device in
                let d = try JSONObjectReader(item, at: "notification.devices[\(i)]")
                return MatrixNotification.Device(
                    appID: try d.string("app_id"), pushkey: try d.string("pushkey"), pushkeyTS: try d.integer("pushkey_ts"), data: d["data"],
                    tweaks: d["tweaks"])
            }
        }
        self.notification = notification
    }
}

extension JSONValue {
    /// The text of a string value.
    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}
