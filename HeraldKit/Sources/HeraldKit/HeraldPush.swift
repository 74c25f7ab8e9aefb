public import Foundation
import KasiaProtocol

/// A push Herald sent, decoded from the notification's user info or its raw JSON.
public enum HeraldPush: Hashable, Sendable {
    /// A Kasia transaction (`kasia` dictionary).
    case kasia(KasiaPush)
    /// SafeWhisper's silent push: which conversation changed (`c`).
    case conversation(ConversationPush)
    /// GhostTalk's session message (`session_id`, `message_id`, …).
    case session(SessionPush)
    /// A Claudiator agent event (`session_id`, `device_name`, `event_type`).
    case agentEvent(AgentEventPush)
    /// Anything else (a `custom` push, or a Matrix notify's document): its alert and its data.
    case other(CustomPush)

    /// The visible alert a push carries, if any.
    public struct Alert: Hashable, Sendable {
        public var title: String?
        public var body: String?
        public init(title: String?, body: String?) {
            self.title = title
            self.body = body
        }
    }

    /// Decodes `userInfo` as iOS hands it to the app and its extension.
    public init(userInfo: [AnyHashable: Any]) {
        var dictionary: [String: Any] = [:]
        for (key, value) in userInfo { if let key = key as? String { dictionary[key] = value } }
        self.init(dictionary: dictionary)
    }

    /// Decodes the push's JSON payload: an APNs payload, or a Web Push message's decrypted data
    /// (Herald encrypts the same JSON document to a browser or UnifiedPush subscription).
    public init(json: Data) throws(HeraldPushError) {
        guard let object = try? JSONSerialization.jsonObject(with: json), let dictionary = object as? [String: Any] else {
            throw .notAJSONObject
        }
        self.init(dictionary: dictionary, decodingProof: false)
        // A proof's numbers are read exactly from the bytes (JSONSerialization's may pass through doubles).
        if case .kasia(var push) = self, (dictionary["kasia"] as? [String: Any])?["proof"] != nil {
            push.proof = (try? JSONDecoder().decode(ProofCarrier.self, from: json))?.kasia.proof
            self = .kasia(push)
        }
    }

    private struct ProofCarrier: Decodable {
        struct Kasia: Decodable { var proof: KaspaTransactionProof? }
        var kasia: Kasia
    }

    /// Decodes an FCM data message's `data` map as Herald sends it to Android (README "FCM
    /// messages"): every value a string, objects such as `kasia` as JSON text, and the alert as
    /// top-level `title`, `subtitle` and `body`. The same `HeraldPush` as the APNs payload gives.
    public init(fcmData data: [String: String]) {
        var d: [String: Any] = [:]
        for (key, text) in data {
            if let first = text.first, first == "{" || first == "[",
                let decoded = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
            {
                d[key] = decoded
            } else if Self.fcmBooleanKeys.contains(key), let flag = Bool(text) {
                d[key] = flag
            } else {
                d[key] = text
            }
        }
        // `aps` carries how the alert presents (Apple's keys, as JSON); the texts travel as
        // `title`, `subtitle` and `body`: the alert, never a custom push's data.
        if data["title"] != nil || data["body"] != nil {
            var aps = d["aps"] as? [String: Any] ?? [:]
            var alert: [String: Any] = [:]
            alert["title"] = data["title"]
            alert["body"] = data["body"]
            aps["alert"] = alert
            d["aps"] = aps
        }
        for key in ["title", "subtitle", "body"] { d[key] = nil }
        self.init(dictionary: d)
    }

    /// The member Herald marks a Matrix notify's documents with (`"herald_source":"matrix"`).
    static let sourceKey = "herald_source"

    /// Fields the templates send as JSON booleans (numbers are read from strings anyway).
    static let fcmBooleanKeys: Set<String> = ["encrypted", "has_attachment"]

    init(dictionary d: [String: Any], decodingProof: Bool = true) {
        let alert = Self.alert(d["aps"])
        // A Matrix notify's document (Herald marks it in the signed bytes): a homeserver's words,
        // never a Kasia push or another template's, whatever keys it carries.
        if d[Self.sourceKey] as? String == "matrix" {
            self = .other(CustomPush(alert: alert, document: d))
            return
        }
        if let kasia = d["kasia"] as? [String: Any], let push = KasiaPush(kasia, alert: alert, decodingProof: decodingProof) {
            self = .kasia(push)
        } else if let hash = d["c"] as? String {
            self = .conversation(ConversationPush(conversationHash: hash))
        } else if let session = d["session_id"] as? String, let message = d["message_id"] as? String {
            self = .session(SessionPush(
                sessionID: session, messageID: message, timestamp: JSONNumber.int64(d["timestamp"]),
                encrypted: d["encrypted"] as? Bool ?? false, hasAttachment: d["has_attachment"] as? Bool ?? false, alert: alert))
        } else if let session = d["session_id"] as? String, let event = d["event_type"] as? String {
            self = .agentEvent(AgentEventPush(sessionID: session, deviceName: d["device_name"] as? String, eventType: event, alert: alert))
        } else {
            self = .other(CustomPush(alert: alert, document: d))
        }
    }

    static func alert(_ aps: Any?) -> Alert? {
        guard let aps = aps as? [String: Any] else { return nil }
        if let text = aps["alert"] as? String { return Alert(title: nil, body: text) }
        guard let alert = aps["alert"] as? [String: Any] else { return nil }
        return Alert(title: alert["title"] as? String, body: alert["body"] as? String)
    }
}

/// A push no template of Herald's shaped (`custom`), as the app's backend published it.
public struct CustomPush: Hashable, Sendable {
    public var alert: HeraldPush.Alert?
    /// The document's members besides `aps` and Herald's own (`herald_…`): a string as itself, any
    /// other value as its JSON text (sorted keys), as FCM's data map carries every value, so an
    /// iPhone, an Android device and a browser read the same map.
    public var data: [String: String]

    public init(alert: HeraldPush.Alert?, data: [String: String] = [:]) {
        self.alert = alert
        self.data = data
    }

    init(alert: HeraldPush.Alert?, document: [String: Any]) {
        var data: [String: String] = [:]
        for (key, value) in document where key != "aps" && !key.hasPrefix("herald_") {
            if let text = value as? String {
                data[key] = text
            } else if let json = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys, .withoutEscapingSlashes]) {
                data[key] = String(decoding: json, as: UTF8.self)
            }
        }
        self.init(alert: alert, data: data)
    }
}

/// Why push JSON did not decode.
public enum HeraldPushError: Error, Hashable, Sendable {
    case notAJSONObject
}

/// The `kasia` dictionary of a Kasia push: type, txId, sender, amount, payload.
public struct KasiaPush: Hashable, Sendable {
    public typealias Kind = KasiaMessageKind

    public var kind: Kind
    public var txID: String
    /// The sender's address; nil from an app with `privacy: minimal` (the push services never see
    /// it): the resolver finds the contact by the message's alias, else the app by the transaction.
    public var sender: String?
    /// Hex of the whole transaction payload; `nil` when too large for a push (fetch by `txID`).
    public var payloadHex: String?
    /// Unix seconds.
    public var timestamp: Int64
    public var daaScore: UInt64
    /// Sompi (payments).
    public var amount: UInt64?
    /// The gateway's generic alert (shown if the extension cannot do better).
    public var alert: HeraldPush.Alert?
    /// The transaction and the coin it spends, for checking the sender on the phone (sealed
    /// pushes only, when Herald knows the coin). Its payload is `payloadHex`.
    public var proof: KaspaTransactionProof?

    public init(
        kind: Kind, txID: String, sender: String?, payloadHex: String?, timestamp: Int64, daaScore: UInt64,
        amount: UInt64? = nil, alert: HeraldPush.Alert? = nil, proof: KaspaTransactionProof? = nil
    ) {
        self.kind = kind
        self.txID = txID
        self.sender = sender
        self.payloadHex = payloadHex
        self.timestamp = timestamp
        self.daaScore = daaScore
        self.amount = amount
        self.alert = alert
        self.proof = proof
    }

    init?(_ d: [String: Any], alert: HeraldPush.Alert?, decodingProof: Bool = true) {
        guard let type = d["type"] as? String, let kind = Kind(rawValue: type),
            let txID = d["txId"] as? String
        else { return nil }
        self.init(
            kind: kind, txID: txID, sender: d["sender"] as? String, payloadHex: d["payload"] as? String,
            timestamp: JSONNumber.int64(d["timestamp"]) ?? 0, daaScore: JSONNumber.uint64(d["daaScore"]) ?? 0,
            amount: JSONNumber.uint64(d["amount"]), alert: alert,
            proof: !decodingProof ? nil : (d["proof"] as? [String: Any]).flatMap { try? JSONSerialization.data(withJSONObject: $0) }
                .flatMap { try? JSONDecoder().decode(KaspaTransactionProof.self, from: $0) })
    }
}

/// SafeWhisper's `{"c": first 32 hex of SHA-256(conversation id)}`.
public struct ConversationPush: Hashable, Sendable {
    public var conversationHash: String
    public init(conversationHash: String) { self.conversationHash = conversationHash }
}

/// GhostTalk's session message push.
public struct SessionPush: Hashable, Sendable {
    public var sessionID: String
    public var messageID: String
    /// Unix seconds.
    public var timestamp: Int64?
    public var encrypted: Bool
    public var hasAttachment: Bool
    public var alert: HeraldPush.Alert?

    public init(sessionID: String, messageID: String, timestamp: Int64?, encrypted: Bool, hasAttachment: Bool, alert: HeraldPush.Alert? = nil) {
        self.sessionID = sessionID
        self.messageID = messageID
        self.timestamp = timestamp
        self.encrypted = encrypted
        self.hasAttachment = hasAttachment
        self.alert = alert
    }
}

/// Claudiator's agent event push.
public struct AgentEventPush: Hashable, Sendable {
    public var sessionID: String
    public var deviceName: String?
    /// `Stop` or `Notification`.
    public var eventType: String
    public var alert: HeraldPush.Alert?

    public init(sessionID: String, deviceName: String?, eventType: String, alert: HeraldPush.Alert? = nil) {
        self.sessionID = sessionID
        self.deviceName = deviceName
        self.eventType = eventType
        self.alert = alert
    }
}

/// Numbers in user info arrive as NSNumber, Int, Double or (from some bridges) strings.
enum JSONNumber {
    static func int64(_ value: Any?) -> Int64? {
        switch value {
        case let v as Int64: v
        case let v as Int: Int64(v)
        case let v as UInt64: Int64(exactly: v)
        case let v as Double: Int64(exactly: v.rounded(.towardZero))
        case let v as NSNumber: v.int64Value
        case let v as String: Int64(v)
        default: nil
        }
    }

    static func uint64(_ value: Any?) -> UInt64? {
        switch value {
        case let v as UInt64: v
        case let v as Int: UInt64(exactly: v)
        case let v as Int64: UInt64(exactly: v)
        case let v as Double: UInt64(exactly: v.rounded(.towardZero))
        case let v as NSNumber: v.uint64Value
        case let v as String: UInt64(v)
        default: nil
        }
    }
}
