import Foundation

/// What a device carries for its push service, opaque to the store and the delivery core: string
/// values under keys each service names and reads for itself (APNs `environment`, FCM
/// `token_kind`, Web Push `web_keys`), kept in one `attributes` column as a JSON object of strings
/// with its keys in ascending order. Every device keeps an `environment`, the builds it came from.
/// The common forms (an environment alone) are read without a JSON parse.
public struct DeviceAttributes: Hashable, Sendable, CustomStringConvertible {
    /// The stored form: a JSON object of strings, keys in ascending order, no spaces.
    public let storedForm: String

    private static let sandbox = #"{"environment":"sandbox"}"#
    private static let production = #"{"environment":"production"}"#

    /// No values: what a service adds when it keeps nothing of a registration.
    public static let empty = DeviceAttributes(storedForm: "{}")

    /// A device of an app's production builds, or of its development (sandbox) builds.
    public init(production: Bool) {
        storedForm = production ? Self.production : Self.sandbox
    }

    /// A device of the builds `environment` names (`production` or `sandbox`); nil for any other name.
    public init?(environment: String) {
        guard environment == "production" || environment == "sandbox" else { return nil }
        self.init(production: environment == "production")
    }

    public init(_ values: [String: String]) {
        if values.isEmpty {
            storedForm = Self.empty.storedForm
        } else if values == ["environment": "sandbox"] {
            storedForm = Self.sandbox
        } else if values == ["environment": "production"] {
            storedForm = Self.production
        } else {
            let data = (try? JSONSerialization.data(withJSONObject: values, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
            storedForm = String(decoding: data, as: UTF8.self)
        }
    }

    /// A stored form as it was stored (written by `init(_:)`, or by the schema's migration in the
    /// same form), read lazily: one that is not a JSON object of strings reads as no values.
    public init(storedForm text: String) {
        storedForm = text
    }

    /// The value under `key`, if the device has one.
    public subscript(key: String) -> String? {
        if storedForm == Self.sandbox { return key == "environment" ? "sandbox" : nil }
        if storedForm == Self.production { return key == "environment" ? "production" : nil }
        return values[key]
    }

    /// Every value.
    public var values: [String: String] {
        if storedForm == Self.sandbox { return ["environment": "sandbox"] }
        if storedForm == Self.production { return ["environment": "production"] }
        if storedForm == Self.empty.storedForm { return [:] }
        return Self.parse(storedForm)
    }

    /// These attributes with every value of `other` set (other's win).
    public func merging(_ other: DeviceAttributes) -> DeviceAttributes {
        if other == Self.empty { return self }
        return other.values.reduce(self) { $0.setting($1.key, to: $1.value) }
    }

    /// These attributes with `key` set to `value` (removed when nil).
    public func setting(_ key: String, to value: String?) -> DeviceAttributes {
        if self[key] == value { return self }
        var values = values
        values[key] = value
        return DeviceAttributes(values)
    }

    public var description: String { storedForm }

    private static func parse(_ text: String) -> [String: String] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { return [:] }
        return object.compactMapValues { $0 as? String }
    }
}
