import HeraldAPNs
import NIOCore

/// A request field a template cannot use; the API answers it with the field named.
public struct TemplateError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The field at fault, as the API names it (`fields.aps`, `fields.push_type`, …).
    public var field: String
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "\(field): \(message)" }
}

/// The `custom` template (SPEC §3.2): the caller's `aps` dictionary and top-level keys.
public enum CustomTemplate {
    /// Renders `{"aps": aps, <data keys>…}` and checks it the way Apple would.
    /// - Parameters:
    ///   - pushType: given, or inferred: `background` for a content-available-only `aps`, else `alert`.
    ///   - priority: given, or 5 for background and 10 otherwise.
    public static func render(
        aps: JSONValue, data: JSONValue? = nil, pushType: APNsPushType? = nil, priority: APNsPriority? = nil,
        collapseID: String? = nil
    ) throws(TemplateError) -> RenderedPush {
        guard let apsFields = aps.objectFields else {
            throw TemplateError(field: "fields.aps", message: "is a JSON object")
        }
        var fields = [JSONValue.Field("aps", aps)]
        if let data {
            guard let dataFields = data.objectFields else {
                throw TemplateError(field: "fields.data", message: "is a JSON object")
            }
            if dataFields.contains(where: { $0.key == "aps" }) {
                throw TemplateError(field: "fields.data", message: "must not contain \"aps\"")
            }
            fields += dataFields
        }
        let payload = JSONValue.object(fields).encoded
        let visible = apsFields.contains { ["alert", "badge", "sound"].contains($0.key) }
        let contentAvailable = apsFields.contains { $0.key == "content-available" && $0.value == .int(1) }
        let type = pushType ?? (contentAvailable && !visible ? .background : .alert)
        let resolvedPriority = priority ?? (type == .background ? .considerate : .immediate)
        // Apple's checks, on a stand-in device and topic (those are checked where they are known).
        let probe = APNsNotification(
            deviceToken: String(repeating: "0", count: APNsDeviceToken.minimumLength),
            topic: type == .voip ? "herald.check.voip" : "herald.check", pushType: type, priority: resolvedPriority,
            collapseID: collapseID, payload: ByteBuffer(bytes: payload))
        do {
            try probe.validate()
        } catch {
            let field = switch error.field {
            case "payload": "fields"
            case "push_type": "fields.push_type"
            case "priority": "priority"
            case "collapse_id": "collapse_id"
            default: "fields"
            }
            throw TemplateError(field: field, message: error.message)
        }
        return RenderedPush(pushType: type, priority: resolvedPriority, collapseID: collapseID, payload: payload)
    }
}
