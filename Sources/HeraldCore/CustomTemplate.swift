public import HeraldPushCore

/// A request field a template cannot use; the API answers it with the field named.
public struct TemplateError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The field at fault, as the API names it (`fields.aps`, `fields.push_type`, …).
    public var field: String
    public var message: String
    /// The rendered payload is over the push service's size limit (the API answers 413).
    public var isTooLarge: Bool

    public init(field: String, message: String, isTooLarge: Bool = false) {
        self.field = field
        self.message = message
        self.isTooLarge = isTooLarge
    }

    public var description: String { "\(field): \(message)" }
}

/// The `custom` template: the caller's `aps` dictionary and top-level keys.
public enum CustomTemplate {
    /// Renders `{"aps": aps, <data keys>…}` and checks it against `limits` (the push services'
    /// publish-time limits: Apple's see the `aps` dictionary, FCM's the `fcm` data).
    /// - Parameters:
    ///   - pushType: given, or inferred: `background` for a content-available-only `aps`, else `alert`.
    ///   - priority: given, or 5 for background and 10 otherwise.
    ///   - fcm: `{"data": {…}}`: the FCM data map Android devices get verbatim instead of the one
    ///     derived from `aps` and `data` (strings only; what FCM refuses in it is FCM's limits' to say).
    ///   - limits: the push services' publish-time limits the push is checked against.
    public static func render(
        aps: JSONValue, data: JSONValue? = nil, pushType: PushType? = nil, priority: PushPriority? = nil,
        collapseID: String? = nil, fcm: JSONValue? = nil, checkedBy limits: [any PushLimits] = []
    ) throws(TemplateError) -> RenderedPush {
        guard let apsFields = aps.objectFields else {
            throw TemplateError(field: "fields.aps", message: "is a JSON object")
        }
        if let collapseID { try RenderedPush.checkCollapseID(collapseID) }
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
        var push = RenderedPush(pushType: type, priority: resolvedPriority, collapseID: collapseID, payload: payload)
        if let fcm { push.fcmData = try fcmData(fcm) }
        try limits.check(push)
        return push
    }

    /// A custom event's `fields.push_type`: one of Apple's `apns-push-type` values.
    public static func pushType(_ value: JSONValue) throws(TemplateError) -> PushType {
        guard case .string(let text) = value, let parsed = PushType(rawValue: text) else {
            throw TemplateError(field: "fields.push_type", message: "push_type is one of Apple's apns-push-type values")
        }
        return parsed
    }

    /// Reads `fields.fcm`: only a `data` object of strings. A `notification` block is refused on
    /// purpose: it would show text FCM can read.
    static func fcmData(_ fcm: JSONValue) throws(TemplateError) -> [String: String] {
        guard let fields = fcm.objectFields else { throw TemplateError(field: "fields.fcm", message: "is a JSON object") }
        if let other = fields.first(where: { $0.key != "data" }) {
            throw TemplateError(field: "fields.fcm.\(other.key)", message: "is not accepted: Herald sends data-only FCM messages; fcm carries only data")
        }
        guard let dataFields = fields.first(where: { $0.key == "data" })?.value.objectFields else {
            throw TemplateError(field: "fields.fcm.data", message: "is a JSON object of strings")
        }
        var map: [String: String] = [:]
        for field in dataFields {
            guard case .string(let text) = field.value else {
                throw TemplateError(field: "fields.fcm.data.\(field.key)", message: "is a string (FCM data values are strings)")
            }
            map[field.key] = text
        }
        return map
    }
}
