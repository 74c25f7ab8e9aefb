/// A field of a JSON body that is not what the API says: its path (`events[3].targets.keys[0]`)
/// and why. Routes turn it into a 400 naming the field.
public struct JSONFieldError: Error, Hashable, Sendable {
    public var field: String
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    /// The body itself was not an object.
    public var isBody: Bool { field == "body" }
}

/// An object's fields by key, each read as a type or refused naming its path, for bodies parsed
/// by `JSONValue(parsing:)` (no `JSONDecoder` on the hot paths). A null field is an absent one,
/// as `decodeIfPresent` reads it; keys the API does not name are ignored.
public struct JSONObjectReader {
    public let fields: [JSONValue.Field]
    /// Where the object is (empty for the body), the prefix of every field it names.
    public let path: String

    /// - Throws: a refusal naming `path` (or `body`) when `value` is not an object.
    public init(_ value: JSONValue, at path: String) throws(JSONFieldError) {
        guard case .object(let fields) = value else {
            throw JSONFieldError(field: path.isEmpty ? "body" : path, message: "\(path.isEmpty ? "the body" : path) must be an object")
        }
        self.fields = fields
        self.path = path
    }

    /// The value at `key`, nil when absent or null.
    public subscript(key: String) -> JSONValue? {
        guard let value = fields.first(where: { $0.key == key })?.value, value != .null else { return nil }
        return value
    }

    /// The path of `key` in this object.
    public func path(of key: String) -> String { path.isEmpty ? key : path + "." + key }

    public func refusal(_ key: String, _ kind: String) -> JSONFieldError {
        let field = path(of: key)
        return JSONFieldError(field: field, message: "\(field) must be \(kind)")
    }

    public func string(_ key: String) throws(JSONFieldError) -> String? {
        guard let value = self[key] else { return nil }
        guard case .string(let text) = value else { throw refusal(key, "a string") }
        return text
    }

    public func bool(_ key: String) throws(JSONFieldError) -> Bool? {
        guard let value = self[key] else { return nil }
        guard case .bool(let flag) = value else { throw refusal(key, "true or false") }
        return flag
    }

    /// An integer within Int64 (the parser reads `2.0` and `1E+2` as integers already).
    public func integer(_ key: String) throws(JSONFieldError) -> Int64? {
        guard let value = self[key] else { return nil }
        guard case .int(let i) = value else { throw refusal(key, "an integer") }
        return i
    }

    /// An integer from 0 to `UInt64.max`.
    public func unsigned(_ key: String) throws(JSONFieldError) -> UInt64? {
        switch self[key] {
        case nil: return nil
        case .int(let i) where i >= 0: return UInt64(i)
        case .unsigned(let u): return u
        default: throw refusal(key, "an integer from 0 to \(UInt64.max)")
        }
    }

    /// An array of strings; an element of another type is refused at its index.
    public func strings(_ key: String) throws(JSONFieldError) -> [String]? {
        guard let value = self[key] else { return nil }
        guard case .array(let items) = value else { throw refusal(key, "an array") }
        var strings: [String] = []
        strings.reserveCapacity(items.count)
        for (i, item) in items.enumerated() {
            guard case .string(let text) = item else {
                let field = "\(path(of: key))[\(i)]"
                throw JSONFieldError(field: field, message: "\(field) must be a string")
            }
            strings.append(text)
        }
        return strings
    }

    /// An array; its elements are the caller's to read.
    public func array(_ key: String) throws(JSONFieldError) -> [JSONValue]? {
        guard let value = self[key] else { return nil }
        guard case .array(let items) = value else { throw refusal(key, "an array") }
        return items
    }
}
