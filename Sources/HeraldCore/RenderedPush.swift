import Foundation
public import HeraldPushCore

/// A push rendered from an event: the APNs request minus the device and topic.
public struct RenderedPush: Hashable, Sendable {
    public var pushType: PushType
    public var priority: PushPriority
    public var collapseID: String?
    /// The exact JSON payload.
    public var payload: [UInt8]
    /// The FCM `data` map a `custom` event gave verbatim (`fields.fcm.data`); nil: FCM's data is
    /// derived from `payload`.
    public var fcmData: [String: String]?

    public init(pushType: PushType, priority: PushPriority, collapseID: String?, payload: [UInt8], fcmData: [String: String]? = nil) {
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.payload = payload
        self.fcmData = fcmData
    }

    /// The largest alert push document, in bytes: APNs's limit for an alert, the smallest of the
    /// services'. Templates that fit what they can inline fit it to this.
    public static let maximumAlertSize = 4_096

    /// A push as the stores keep it: the type and priority as their raw values (one the store
    /// does not know reads as an alert sent at once).
    public init(storedPushType: String, storedPriority: Int, collapseID: String?, payload: [UInt8], fcmData: [String: String]? = nil) {
        self.init(
            pushType: PushType(rawValue: storedPushType) ?? .alert, priority: PushPriority(rawValue: storedPriority) ?? .immediate,
            collapseID: collapseID, payload: payload, fcmData: fcmData)
    }

    /// `fcmData` as the stores keep it (JSON, keys sorted), or nil.
    public var fcmDataJSON: String? {
        guard let fcmData else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(fcmData)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Reads the stored form back (nil for nil or anything that is not a map of strings).
    public static func fcmData(json: String?) -> [String: String]? {
        json.flatMap { try? JSONDecoder().decode([String: String].self, from: Data($0.utf8)) }
    }
}

extension RenderedPush {
    /// The shorter alert body keeps at least this many characters.
    static let minimumTruncatedBody = 16

    /// A smaller push for a 413 PayloadTooLarge (drop optional fields, else truncate the body),
    /// or nil when nothing can be dropped. Optional are the Kasia inline `payload` (the app fetches the
    /// transaction when it is null), then the sender `proof`; the body is then cut to half, ending
    /// in "…". Keys come out sorted.
    public func shrunk() -> RenderedPush? {
        guard var root = try? JSONDecoder().decode(JSONValue.self, from: Data(payload)), root.objectFields != nil else {
            return nil
        }
        if case .string = root[path: ["kasia", "payload"]] {
            root[path: ["kasia", "payload"]] = .null
        } else if case .object(let fields)? = root[path: ["kasia"]], fields.contains(where: { $0.key == KasiaTemplate.proofKey }) {
            // The sender proof (sealed pushes only) goes next: the app can still check the fetched transaction.
            root[path: ["kasia"]] = .object(fields.filter { $0.key != KasiaTemplate.proofKey })
        } else if case .string(let body) = root[path: ["aps", "alert", "body"]], body.count > Self.minimumTruncatedBody {
            root[path: ["aps", "alert", "body"]] = .string(Self.truncated(body))
        } else if case .string(let alert) = root[path: ["aps", "alert"]], alert.count > Self.minimumTruncatedBody {
            root[path: ["aps", "alert"]] = .string(Self.truncated(alert))
        } else {
            return nil
        }
        var smaller = self
        smaller.payload = root.encoded
        return smaller
    }

    private static func truncated(_ text: String) -> String {
        String(text.prefix(max(minimumTruncatedBody, text.count / 2))) + "…"
    }
}

