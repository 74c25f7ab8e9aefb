import HeraldAPNsCore

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
        return try RenderedPush(pushType: type, priority: resolvedPriority, collapseID: collapseID, payload: payload).validated()
    }
}
