
/// Why bytes are not a JSON document.
public struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The byte offset where the document stops being JSON.
    public var offset: Int
    public var description: String { "not valid JSON at byte \(offset)" }
}

extension JSONValue {
    /// Nesting deeper than this is refused (a hostile body must not exhaust the stack).
    public static let maximumDepth = 128

    /// Parses a UTF-8 JSON document (RFC 8259) in one pass, without Foundation: the hot routes'
    /// bodies, where `JSONDecoder` cost more than the rest of the request. Objects come out as the
    /// `Decodable` conformance gives them: keys sorted, a repeated key's first value kept. A whole
    /// number is `int` (`unsigned` past `Int64.max`), written with a fraction or exponent too (`1E+2`,
    /// as `JSONDecoder` reads it); any other number is `double`.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(JSONParseError) {
        var parser = JSONBytesParser(bytes: bytes.bindMemory(to: UInt8.self))
        parser.skipSpace()
        self = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.at == parser.bytes.count else { throw JSONParseError(offset: parser.at) }
    }

    /// Parses a UTF-8 JSON document from an array of bytes.
    public init(parsing bytes: [UInt8]) throws(JSONParseError) {
        let result = bytes.withUnsafeBytes { raw in Result { () throws(JSONParseError) in try JSONValue(parsing: raw) } }
        self = try result.get()
    }
}

private struct JSONBytesParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var at = 0
    /// The open containers' elements so far, innermost last: each container is copied out once
    /// at its exact size, not grown element by element.
    var openFields: [JSONValue.Field] = []
    var openItems: [JSONValue] = []

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    func fail() -> JSONParseError { JSONParseError(offset: at) }

    mutating func skipSpace() {
        while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 { at += 1 }
    }

    mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth < JSONValue.maximumDepth, at < bytes.count else { throw fail() }
        switch bytes[at] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return try number()
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        guard at + count <= bytes.count else { throw fail() }
        for i in 0..<count where bytes[at + i] != word.utf8Start[i] { throw fail() }
        at += count
    }

    mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
        at += 1
        skipSpace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "}") {
            at += 1
            return .object([])
        }
        let base = openFields.count
        if base == 0 { openFields.reserveCapacity(16) }
        while true {
            skipSpace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail() }
            let key = try string()
            skipSpace()
            guard at < bytes.count, bytes[at] == UInt8(ascii: ":") else { throw fail() }
            at += 1
            skipSpace()
            let value = try value(depth: depth)
            openFields.append(.init(key, value))
            guard try more(before: UInt8(ascii: "}")) else { break }
        }
        var fields = Self.close(&openFields, from: base)
        // As the Decodable conformance: sorted keys, the first of a repeated key.
        if zip(fields, fields.dropFirst()).allSatisfy({ $0.key < $1.key }) { return .object(fields) }
        // In place: the standard library's sort is stable (a repeated key's first value stays
        // first) and O(n log n), so a hostile object costs no n².
        fields.sort { $0.key < $1.key }
        var kept = 1
        for i in 1..<fields.count where fields[i].key != fields[kept - 1].key {
            fields.swapAt(kept, i)
            kept += 1
        }
        fields.removeLast(fields.count - kept)
        return .object(fields)
    }

    mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
        at += 1
        skipSpace()
        if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
            at += 1
            return .array([])
        }
        let base = openItems.count
        if base == 0 { openItems.reserveCapacity(8) }
        while true {
            skipSpace()
            let item = try value(depth: depth)
            openItems.append(item)
            guard try more(before: UInt8(ascii: "]")) else { break }
        }
        return .array(Self.close(&openItems, from: base))
    }

    /// The elements of the container that opened at `base`, taken off `open`: the outermost
    /// container is handed the whole stack, an inner one a copy at its size.
    static func close<Element>(_ open: inout [Element], from base: Int) -> [Element] {
        if base == 0 {
            defer { open = [] }
            return open
        }
        defer { open.removeSubrange(base...) }
        return Array(open[base...])
    }

    /// After a container's element: true past a `,` (another follows), false past `closer`.
    mutating func more(before closer: UInt8) throws(JSONParseError) -> Bool {
        skipSpace()
        guard at < bytes.count, bytes[at] == UInt8(ascii: ",") || bytes[at] == closer else { throw fail() }
        at += 1
        return bytes[at - 1] == UInt8(ascii: ",")
    }

    /// A string from its opening quote; escapes decoded, UTF-8 checked, control characters refused.
    mutating func string() throws(JSONParseError) -> String {
        at += 1
        let start = at
        // The common case: no escape.
        at = JSONStringRun.end(UnsafeRawBufferPointer(bytes), from: at)
        guard at < bytes.count, bytes[at] >= 0x20 else { throw fail() }
        if bytes[at] == UInt8(ascii: "\"") {
            defer { at += 1 }
            guard let text = String(utf8Validating: UnsafeBufferPointer(rebasing: bytes[start..<at])) else { throw fail() }
            return text
        }
        var out = Array(bytes[start..<at])
        while true {
            guard at < bytes.count else { throw fail() }
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                at += 1
                break
            }
            guard byte >= 0x20 else { throw fail() }
            guard byte == UInt8(ascii: "\\") else {
                out.append(byte)
                at += 1
                continue
            }
            at += 1
            guard at < bytes.count else { throw fail() }
            let escape = bytes[at]
            at += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    // A high surrogate must be followed by an escaped low one.
                    guard at + 1 < bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else { throw fail() }
                    at += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail() }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw fail()
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw fail() }
                out.append(contentsOf: Array(String(Character(unicode)).utf8))
            default:
                throw fail()
            }
        }
        guard let text = out.withUnsafeBufferPointer({ String(utf8Validating: $0) }) else { throw fail() }
        return text
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard at + 4 <= bytes.count else { throw fail() }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[at]
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw fail()
            }
            value = value << 4 | digit
            at += 1
        }
        return value
    }

    /// RFC 8259's number grammar, exactly: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    mutating func number() throws(JSONParseError) -> JSONValue {
        let start = at
        func digits(_ p: inout JSONBytesParser) -> Int {
            let from = p.at
            while p.at < p.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(p.bytes[p.at]) { p.at += 1 }
            return p.at - from
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
        guard at < bytes.count else { throw fail() }
        if bytes[at] == UInt8(ascii: "0") {
            at += 1
        } else {
            guard digits(&self) > 0 else { throw fail() }
        }
        var integral = true
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            at += 1
            integral = false
            guard digits(&self) > 0 else { throw fail() }
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            at += 1
            integral = false
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard digits(&self) > 0 else { throw fail() }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
        if integral {
            if let i = Int64(text) { return .int(i) }
            if let u = UInt64(text) { return .unsigned(u) }
        }
        guard let d = Double(text), d.isFinite else { throw JSONParseError(offset: start) }
        // Digits past UInt64 stay a double: rounding `-9223372036854775809` to Int64.min would
        // accept a number the API's range refuses.
        if !integral, d.rounded() == d, d >= -9_223_372_036_854_775_808, d < 9_223_372_036_854_775_808 { return .int(Int64(d)) }
        return .double(d)
    }
}
