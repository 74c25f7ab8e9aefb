/// A JSON value whose objects keep their key order, so rendered payloads are exact bytes.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case unsigned(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([Field])

    /// One key and value of an object, in order.
    public struct Field: Hashable, Sendable {
        public var key: String
        public var value: JSONValue
        public init(_ key: String, _ value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    /// Compact UTF-8 JSON (no spaces), keys in their given order.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out)
        return out
    }

    func write(to out: inout [UInt8]) {
        switch self {
        // Appended from the strings' own UTF-8: no array made for each value.
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .unsigned(let u): out.append(contentsOf: String(u).utf8)
        case .double(let d): out.append(contentsOf: (d.isFinite ? "\(d)" : "null").utf8)
        case .string(let s): Self.writeString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            out.append(UInt8(ascii: "{"))
            for (i, field) in fields.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(field.key, to: &out)
                out.append(UInt8(ascii: ":"))
                field.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings need no escape: checked over their contiguous UTF-8 and copied whole (one
        // copy, not a byte at a time; `utf8.contains(where:)` cost a push's JSON more than the copy).
        var text = s
        let copied = text.withUTF8 { bytes -> Bool in
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied {
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xf)]]
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension JSONValue: Decodable {
    /// Decodes any JSON; object keys are sorted, so the same input always renders the same bytes.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? container.decode(Int64.self) {
            self = .int(i)
        } else if let u = try? container.decode(UInt64.self) {
            self = .unsigned(u)
        } else if let d = try? container.decode(Double.self) {
            self = .double(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([JSONValue].self) {
            self = .array(a)
        } else {
            let o = try container.decode([String: JSONValue].self)
            self = .object(o.keys.sorted().map { Field($0, o[$0]!) })
        }
    }

    /// The object's fields, or nil for other values.
    public var objectFields: [Field]? {
        if case .object(let fields) = self { return fields }
        return nil
    }

    /// The array's items, or nil for other values.
    public var arrayItems: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// The string, or nil for other values.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }
}

extension JSONValue {
    /// The value at a path of object keys; nil where a key is missing or a value is not an object.
    /// Setting a path that does not exist changes nothing.
    public subscript(path path: [String]) -> JSONValue? {
        get {
            guard let key = path.first else { return self }
            guard let field = objectFields?.first(where: { $0.key == key }) else { return nil }
            return field.value[path: Array(path.dropFirst())]
        }
        set {
            guard let key = path.first else {
                if let newValue { self = newValue }
                return
            }
            guard var fields = objectFields, let i = fields.firstIndex(where: { $0.key == key }) else { return }
            fields[i].value[path: Array(path.dropFirst())] = newValue
            self = .object(fields)
        }
    }
}

extension JSONValue {
    /// An object whose keys are sorted (byte order), so the same fields always render the same bytes.
    public static func sortedObject(_ fields: [String: JSONValue]) -> JSONValue {
        .object(fields.sorted { $0.key < $1.key }.map { Field($0.key, $0.value) })
    }
}

extension JSONValue: ExpressibleByBooleanLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}
