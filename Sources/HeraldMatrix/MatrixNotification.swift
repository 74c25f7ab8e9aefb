import Foundation
import HeraldCore

/// The body of `POST /_matrix/push/v1/notify` (Matrix Push Gateway API, "Push Gateway API"
/// in the client-server specification): one notification for one or more pushers' devices.
public struct MatrixNotifyRequest: Decodable, Sendable {
    public var notification: MatrixNotification?

    public init(notification: MatrixNotification?) {
        self.notification = notification
    }
}

/// What a homeserver says happened. Every field but `devices` is optional: a badge-only
/// notification (a read receipt) has no event, a null `type` and an empty `sender`; an
/// `event_id_only` pusher gets ids and counts only.
public struct MatrixNotification: Decodable, Sendable {
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

    enum CodingKeys: String, CodingKey {
        case type, sender, membership, prio, content, counts, devices
        case eventID = "event_id", roomID = "room_id", senderDisplayName = "sender_display_name", roomName = "room_name"
        case roomAlias = "room_alias", userIsTarget = "user_is_target"
    }

    /// The user's unread notifications and missed calls.
    public struct Counts: Decodable, Sendable, Hashable {
        public var unread: Int64?
        public var missedCalls: Int64?

        public init(unread: Int64? = nil, missedCalls: Int64? = nil) {
            self.unread = unread
            self.missedCalls = missedCalls
        }

        enum CodingKeys: String, CodingKey {
            case unread
            case missedCalls = "missed_calls"
        }
    }

    /// One pusher: its app id, its pushkey (the device's token, or a Web Push subscription's
    /// p256dh) and the pusher's `data` less its `url`.
    public struct Device: Decodable, Sendable {
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

        enum CodingKeys: String, CodingKey {
            case data, tweaks, pushkey
            case appID = "app_id", pushkeyTS = "pushkey_ts"
        }

        /// `data.format`: `event_id_only` or absent.
        public var format: String? { data?[path: ["format"]]?.stringValue }
        /// `data.default_payload`'s fields (absent or not an object: none).
        public var defaultPayload: [JSONValue.Field] { data?[path: ["default_payload"]]?.objectFields ?? [] }
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

extension JSONValue {
    /// The text of a string value.
    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }
}
