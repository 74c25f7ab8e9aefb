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

    /// The value under `key`, if the device has one. Read from the stored form's bytes where it
    /// can be (each push reads its device's values), parsed otherwise.
    public subscript(key: String) -> String? {
        if storedForm == Self.sandbox { return key == "environment" ? "sandbox" : nil }
        if storedForm == Self.production { return key == "environment" ? "production" : nil }
        switch Self.scan(storedForm, for: key, copying: true) {
        case .value(let value): return value
        case .absent: return nil
        case .unread: return values[key]
        }
    }

    /// Whether the device has a value under `key`, read without copying the value out.
    public func contains(_ key: String) -> Bool {
        if storedForm == Self.sandbox || storedForm == Self.production { return key == "environment" }
        switch Self.scan(storedForm, for: key, copying: false) {
        case .value: return true
        case .absent: return false
        case .unread: return values[key] != nil
        }
    }

    /// A value found (nil when not copied out), none, or a text to parse.
    private enum Scan { case value(String?), absent, unread }

    /// Where the first `pattern` in `bytes` ends (its first byte is found with `memchr`, the rest
    /// compared with `memcmp`).
    private static func end(of pattern: UnsafeBufferPointer<UInt8>, in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let base = bytes.baseAddress, let first = pattern.first else { return nil }
        var at = 0
        while at + pattern.count <= bytes.count {
            guard let hit = memchr(base + at, Int32(first), bytes.count - pattern.count - at + 1) else { return nil }
            let i = UnsafeRawPointer(hit).assumingMemoryBound(to: UInt8.self) - base
            if memcmp(base + i, pattern.baseAddress!, pattern.count) == 0 { return i + pattern.count }
            at = i + 1
        }
        return nil
    }

    /// `key`'s value read from the bytes of a stored form: in a JSON object every quote inside a
    /// string is escaped, so an unescaped `"key":"` is that member and nothing else. A value or key
    /// with an escape, or a text that is not an object, is left to the parse (`.unread`). Without
    /// `copying`, a value found is `.value(nil)`.
    private static func scan(_ text: String, for key: String, copying: Bool) -> Scan {
        guard !key.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }) else { return .unread }
        var pattern = [UInt8]()
        pattern.reserveCapacity(key.utf8.count + 4)
        pattern.append(UInt8(ascii: "\""))
        pattern += key.utf8
        pattern += [UInt8(ascii: "\""), UInt8(ascii: ":"), UInt8(ascii: "\"")]
        var text = text
        return text.withUTF8 { bytes -> Scan in
            guard bytes.count >= 2, bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") else { return .unread }
            guard let start = pattern.withUnsafeBufferPointer({ Self.end(of: $0, in: bytes) }) else { return .absent }
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "\"") {
                if bytes[end] == UInt8(ascii: "\\") { return .unread }
                end += 1
            }
            guard end < bytes.count else { return .unread }
            return .value(copying ? String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self) : nil)
        }
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
