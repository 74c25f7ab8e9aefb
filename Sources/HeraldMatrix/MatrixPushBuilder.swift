import Foundation
import HeraldAPNsCore
public import HeraldCore
import HeraldFCMCore
import HeraldPushCore
import HeraldWebPushCore
import WebPushCrypto

/// A Matrix notification as each push service's push, shaped as Sygnal shapes it so the clients
/// that exist (Element and its kin) decode it unchanged. README "Matrix push gateway" has the
/// mapping and where Herald differs. Pure values: no I/O.
public enum MatrixPushBuilder {
    /// The longest a display field (sender, room) is, in characters (Sygnal's `MAX_FIELD_LENGTH`).
    public static let maximumFieldLength = 1_024
    /// FCM: the longest a data value is, in bytes, before it ends in "…" (Sygnal's `MAX_BYTES_PER_FIELD`).
    public static let maximumFCMFieldBytes = 1_024
    /// Web Push: a message body longer than this is cut (Sygnal's `MAX_BODY_LENGTH`).
    public static let maximumWebPushBodyLength = 1_000

    /// The push for one device, or nil when there is nothing to send (an unknown event type
    /// with no counts; a Web Push `events_only` pusher's badge update; a payload that cannot fit).
    public static func push(_ n: MatrixNotification, device: MatrixNotification.Device, app: MatrixApp) -> RenderedPush? {
        switch app.kind {
        case .apns: apns(n, device: device, app: app)
        case .fcm: fcm(n, device: device, app: app)
        case .webpush: webPush(n, device: device, app: app)
        default: nil
        }
    }

    /// Only ids and counts: an `event_id_only` pusher's push, and an encrypted room's event unless
    /// the app asks for its details.
    static func idsOnly(_ n: MatrixNotification, _ device: MatrixNotification.Device, _ app: MatrixApp) -> Bool {
        device.format == "event_id_only" || (n.isEncrypted && !app.encryptedRoomDetails)
    }

    // MARK: APNs

    /// Sygnal's APNs payloads: `event_id_only` (the pusher's `default_payload` plus `room_id`,
    /// `event_id`, `unread_count`, `missed_calls`) or full (`aps.alert.loc-key`/`loc-args` by event
    /// type, the badge, the ids), cut to 4,096 bytes by shortening the alert's texts.
    public static func apns(_ n: MatrixNotification, device: MatrixNotification.Device, app: MatrixApp) -> RenderedPush? {
        var root: [JSONValue.Field]
        if idsOnly(n, device, app) {
            root = device.defaultPayload
            if let room = n.roomID, !room.isEmpty { put(&root, "room_id", .string(room)) }
            if let event = n.eventID, !event.isEmpty { put(&root, "event_id", .string(event)) }
            if let unread = n.counts?.unread { put(&root, "unread_count", .int(unread)) }
            if let missed = n.counts?.missedCalls { put(&root, "missed_calls", .int(missed)) }
            // A full-format pusher still gets its badge: a count, not content.
            if device.format != "event_id_only", let badge = badge(n) { putAPS(&root, "badge", .int(badge)) }
        } else {
            guard let full = fullAPNs(n, device: device) else { return nil }
            root = full
        }
        var aps = root.first { $0.key == "aps" }?.value.objectFields ?? []
        let visible = aps.contains { ["alert", "badge", "sound"].contains($0.key) }
        if !visible {
            // Nothing to show: a background push, which Apple takes only with content-available and priority 5.
            put(&aps, "content-available", .int(1))
            put(&root, "aps", .object(aps))
        }
        put(&root, MatrixNotification.sourceKey, .string(MatrixNotification.sourceValue))
        guard let payload = fitted(root, limit: RenderedPush.maximumAlertSize) else { return nil }
        return RenderedPush(
            pushType: visible ? .alert : .background, priority: visible && !n.isLowPriority ? .immediate : .considerate,
            collapseID: nil, payload: payload)
    }

    /// Sygnal's `_get_payload_full`.
    static func fullAPNs(_ n: MatrixNotification, device: MatrixNotification.Device) -> [JSONValue.Field]? {
        let from: String
        if (n.sender ?? "").isEmpty && (n.senderDisplayName ?? "").isEmpty {
            from = " "
        } else {
            from = String((n.senderDisplayName ?? n.sender ?? "").prefix(maximumFieldLength))
        }
        var locKey: String?
        var locArgs: [String] = []
        switch n.type {
        case "m.room.message", "m.room.encrypted":
            let room = [n.roomName, n.roomAlias].compactMap { $0 }.first { !$0.isEmpty }.map { String($0.prefix(maximumFieldLength)) }
            var text: String?
            var action: String?
            var isImage = false
            if case .string(let msgtype)? = n.content?[path: ["msgtype"]], case .string(let body)? = n.content?[path: ["body"]] {
                if msgtype == "m.emote" { action = body } else { text = body }
                isImage = msgtype == "m.image"
            }
            switch (room, isImage, text, action) {
            case (let room?, true, _, _): (locKey, locArgs) = ("IMAGE_FROM_USER_IN_ROOM", [from, text ?? "", room])
            case (let room?, false, let text?, _): (locKey, locArgs) = ("MSG_FROM_USER_IN_ROOM_WITH_CONTENT", [from, room, text])
            case (let room?, false, nil, let action?): (locKey, locArgs) = ("ACTION_FROM_USER_IN_ROOM", [room, from, action])
            case (let room?, false, nil, nil): (locKey, locArgs) = ("MSG_FROM_USER_IN_ROOM", [from, room])
            case (nil, true, _, _): (locKey, locArgs) = ("IMAGE_FROM_USER", [from, text ?? ""])
            case (nil, false, let text?, _): (locKey, locArgs) = ("MSG_FROM_USER_WITH_CONTENT", [from, text])
            case (nil, false, nil, let action?): (locKey, locArgs) = ("ACTION_FROM_USER", [from, action])
            case (nil, false, nil, nil): (locKey, locArgs) = ("MSG_FROM_USER", [from])
            }
        case "m.call.invite":
            let sdp = n.content?[path: ["offer", "sdp"]]?.stringValue ?? ""
            (locKey, locArgs) = (sdp.contains("m=video") ? "VIDEO_CALL_FROM_USER" : "VOICE_CALL_FROM_USER", [from])
        case "m.room.member":
            if n.userIsTarget == true, n.membership == "invite" {
                if let room = [n.roomName, n.roomAlias].compactMap({ $0 }).first(where: { !$0.isEmpty }) {
                    (locKey, locArgs) = ("USER_INVITE_TO_NAMED_ROOM", [from, String(room.prefix(maximumFieldLength))])
                } else {
                    (locKey, locArgs) = ("USER_INVITE_TO_CHAT", [from])
                }
            }
        case let type? where !type.isEmpty:
            // A type Herald does not know, important enough for the homeserver to push.
            (locKey, locArgs) = ("MSG_FROM_USER", [from])
        default:
            break
        }
        let badge = badge(n)
        guard locKey != nil || badge != nil else { return nil }
        var root: [JSONValue.Field] = (n.type ?? "").isEmpty ? [] : device.defaultPayload
        if let locKey {
            var alert = root.first { $0.key == "aps" }?.value[path: ["alert"]]?.objectFields ?? []
            put(&alert, "loc-key", .string(locKey))
            put(&alert, "loc-args", .array(locArgs.map(JSONValue.string)))
            putAPS(&root, "alert", .object(alert))
        }
        if let badge { putAPS(&root, "badge", .int(badge)) }
        if locKey != nil, let room = n.roomID, !room.isEmpty { put(&root, "room_id", .string(room)) }
        if locKey != nil, let event = n.eventID, !event.isEmpty { put(&root, "event_id", .string(event)) }
        return root
    }

    /// Unread notifications plus missed calls; nil when the homeserver sent neither.
    static func badge(_ n: MatrixNotification) -> Int64? {
        guard let counts = n.counts, counts.unread != nil || counts.missedCalls != nil else { return nil }
        let (sum, overflow) = (counts.unread ?? 0).addingReportingOverflow(counts.missedCalls ?? 0)
        return overflow ? .max : sum
    }

    /// The payload's bytes, the alert's texts shortened (the longest first, whole characters) until
    /// it fits `limit`, as Sygnal's `apnstruncate` does; nil when shortening cannot make it fit.
    static func fitted(_ root: [JSONValue.Field], limit: Int) -> [UInt8]? {
        var value = JSONValue.object(root)
        var bytes = value.encoded
        while bytes.count > limit {
            let texts = choppable(value)
            guard let longest = texts.max(by: { $0.text.utf8.count < $1.text.utf8.count }), !longest.text.isEmpty else { return nil }
            // Cut at least the overflow's bytes, backing off to a character boundary.
            let cut = prefix(longest.text, bytes: min(longest.text.utf8.count - 1, longest.text.utf8.count - (bytes.count - limit)))
            if let index = longest.argument, case .array(var args)? = value[path: longest.path] {
                args[index] = .string(cut)
                value[path: longest.path] = .array(args)
            } else {
                value[path: longest.path] = .string(cut)
            }
            bytes = value.encoded
        }
        return bytes
    }

    /// The texts that may be shortened: `aps.alert` as a string, its `body`, each `loc-args` entry.
    private static func choppable(_ root: JSONValue) -> [(path: [String], argument: Int?, text: String)] {
        switch root[path: ["aps", "alert"]] {
        case .string(let text)?: return [(["aps", "alert"], nil, text)]
        case .object(let alert)?:
            var out: [(path: [String], argument: Int?, text: String)] = []
            if case .string(let body)? = alert.first(where: { $0.key == "body" })?.value { out.append((["aps", "alert", "body"], nil, body)) }
            if case .array(let args)? = alert.first(where: { $0.key == "loc-args" })?.value {
                for (i, arg) in args.enumerated() {
                    if case .string(let text) = arg { out.append((["aps", "alert", "loc-args"], i, text)) }
                }
            }
            return out
        default: return []
        }
    }

    // MARK: FCM

    /// Sygnal's FCM v1 data map: `default_payload`, then `event_id`, `type`, `sender`, `room_name`,
    /// `room_alias`, `membership`, `sender_display_name`, `room_id` (each cut to 1,024 bytes ending
    /// in "…"), `content_<key>` for each string in `content`, `prio` (`high`/`normal`), `unread` and
    /// `missed_calls` as strings. Data-only, so the app decrypts before it shows anything.
    public static func fcm(_ n: MatrixNotification, device: MatrixNotification.Device, app: MatrixApp) -> RenderedPush? {
        var data: [String: String] = [:]
        for field in device.defaultPayload where !FCMMessage.isReservedDataKey(field.key) {
            data[field.key] = field.value.stringValue ?? String(decoding: field.value.encoded, as: UTF8.self)
        }
        let ids = idsOnly(n, device, app)
        let fields: [(String, String?)] =
            ids
            ? [("event_id", n.eventID), ("room_id", n.roomID)]
            : [
                ("event_id", n.eventID), ("type", n.type), ("sender", n.sender), ("room_name", n.roomName), ("room_alias", n.roomAlias),
                ("membership", n.membership), ("sender_display_name", n.senderDisplayName), ("room_id", n.roomID),
            ]
        for case (let key, let value?) in fields { data[key] = truncated(value, bytes: maximumFCMFieldBytes) }
        var contentKeys: [String] = []
        if !ids, let content = n.content?.objectFields {
            for field in content {
                guard case .string(let text) = field.value, !FCMMessage.isReservedDataKey("content_" + field.key) else { continue }
                data["content_" + field.key] = truncated(text, bytes: maximumFCMFieldBytes)
                contentKeys.append("content_" + field.key)
            }
        }
        data["prio"] = n.isLowPriority ? "normal" : "high"
        data[MatrixNotification.sourceKey] = MatrixNotification.sourceValue
        if let unread = n.counts?.unread { data["unread"] = String(unread) }
        if let missed = n.counts?.missedCalls { data["missed_calls"] = String(missed) }
        // Over FCM's 4,096 bytes: the content goes first, largest first.
        for key in contentKeys.sorted(by: { data[$0]!.utf8.count > data[$1]!.utf8.count })
        where FCMMessage.dataBytes(of: data) > FCMMessage.maximumDataBytes {
            data[key] = nil
        }
        guard FCMMessage.dataBytes(of: data) <= FCMMessage.maximumDataBytes else { return nil }
        let payload = JSONValue.object(data.sorted { $0.key < $1.key }.map { .init($0.key, .string($0.value)) }).encoded
        return RenderedPush(
            pushType: .alert, priority: n.isLowPriority ? .considerate : .immediate, collapseID: nil, payload: payload, fcmData: data)
    }

    /// `text` cut to `bytes` UTF-8 bytes, ending in "…" when cut (Sygnal's `truncate_str`).
    static func truncated(_ text: String, bytes: Int) -> String {
        guard text.utf8.count > bytes else { return text }
        return prefix(text, bytes: bytes - 3) + "…"
    }

    /// The longest run of whole code points (as Python slices) from the start of `text` within `bytes` UTF-8 bytes.
    static func prefix(_ text: String, bytes: Int) -> String {
        guard bytes > 0 else { return "" }
        guard text.utf8.count > bytes else { return text }
        var end = text.utf8.index(text.utf8.startIndex, offsetBy: bytes)
        while String.Index(end, within: text.unicodeScalars) == nil { end = text.utf8.index(before: end) }
        return String(text.unicodeScalars[..<end])
    }

    // MARK: Web Push

    /// Sygnal's Web Push payload: `default_payload`, then each of `room_id`, `room_name`,
    /// `room_alias`, `membership`, `event_id`, `sender`, `sender_display_name`, `user_is_target`,
    /// `type`, `content` that is set, and `unread`, `missed_calls`; encrypted to the subscription.
    /// `only_last_per_room`: the room's pushes share a Topic, so a waiting one is replaced.
    public static func webPush(_ n: MatrixNotification, device: MatrixNotification.Device, app: MatrixApp) -> RenderedPush? {
        if device.flag("events_only"), (n.eventID ?? "").isEmpty { return nil }
        var root = device.defaultPayload
        let ids = idsOnly(n, device, app)
        let texts: [(String, String?)] =
            ids
            ? [("room_id", n.roomID), ("event_id", n.eventID)]
            : [
                ("room_id", n.roomID), ("room_name", n.roomName), ("room_alias", n.roomAlias), ("membership", n.membership),
                ("event_id", n.eventID), ("sender", n.sender), ("sender_display_name", n.senderDisplayName),
            ]
        for case (let key, let value?) in texts where !value.isEmpty { put(&root, key, .string(value)) }
        if !ids {
            if n.userIsTarget == true { put(&root, "user_is_target", .bool(true)) }
            if let type = n.type, !type.isEmpty { put(&root, "type", .string(type)) }
            if var content = n.content?.objectFields, !content.isEmpty {
                if case .string(let body)? = content.first(where: { $0.key == "body" })?.value, body.count > maximumWebPushBodyLength {
                    put(&content, "body", .string(String(body.prefix(maximumWebPushBodyLength))))
                }
                put(&root, "content", .object(content))
            }
        }
        if let unread = n.counts?.unread { put(&root, "unread", .int(unread)) }
        if let missed = n.counts?.missedCalls { put(&root, "missed_calls", .int(missed)) }
        put(&root, MatrixNotification.sourceKey, .string(MatrixNotification.sourceValue))
        var payload = JSONValue.object(root).encoded
        if payload.count > WebPushEncryption.maximumPlaintext {
            // One record at most: the content goes (the app fetches the event by its id).
            root.removeAll { $0.key == "content" }
            payload = JSONValue.object(root).encoded
            guard payload.count <= WebPushEncryption.maximumPlaintext else { return nil }
        }
        return RenderedPush(
            pushType: .background, priority: n.isLowPriority ? .considerate : .immediate,
            collapseID: device.flag("only_last_per_room") ? n.roomID : nil, payload: payload)
    }

    // MARK: Fields

    /// Sets `key` in place (where it is, or appended): a dictionary update that keeps the order.
    static func put(_ fields: inout [JSONValue.Field], _ key: String, _ value: JSONValue) {
        if let i = fields.firstIndex(where: { $0.key == key }) { fields[i].value = value; return }
        // A payload gains several keys in a row: room for a few more at once, not a copy per key.
        if fields.count == fields.capacity { fields.reserveCapacity(fields.count + 4) }
        fields.append(.init(key, value))
    }

    /// Sets `aps.<key>`, making `aps` an object if it is not one.
    static func putAPS(_ root: inout [JSONValue.Field], _ key: String, _ value: JSONValue) {
        var aps = root.first { $0.key == "aps" }?.value.objectFields ?? []
        put(&aps, key, value)
        put(&root, "aps", .object(aps))
    }
}

