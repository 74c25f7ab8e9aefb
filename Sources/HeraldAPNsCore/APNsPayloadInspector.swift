import Foundation
import HeraldPushCore
/// What an APNs payload says about itself: enough to check it against its push type.
public struct APNsPayloadSummary: Sendable, Hashable {
    /// The keys of the `aps` dictionary.
    public var apsKeys: Set<String>
    /// The value of `aps.content-available` when it is a number.
    public var contentAvailable: Int?

    /// True when the payload asks the system to show something (alert, badge or sound).
    public var isUserVisible: Bool {
        apsKeys.contains("alert") || apsKeys.contains("badge") || apsKeys.contains("sound")
    }
}

/// Why a payload is not an APNs payload.
public enum APNsPayloadError: Error, Hashable, Sendable {
    /// Not JSON, or JSON whose top level is not an object.
    case notJSONObject
    /// No `aps` key, or `aps` is not a dictionary.
    case missingAPSDictionary
    /// An empty body.
    case empty
}

/// A strict, allocation-light JSON scanner (RFC 8259) that validates a whole payload and
/// reads only what push validation needs. Both the provider and the simulator use it:
/// it runs once per push, so it must not build a Foundation object tree.
public enum APNsPayloadInspector {
    /// Validates `payload` as a JSON object with an `aps` dictionary and summarises it.
    public static func inspect(_ payload: [UInt8]) throws(APNsPayloadError) -> APNsPayloadSummary {
        let result = payload.withUnsafeBytes { bytes in
            Result { () throws(APNsPayloadError) in try inspect(bytes) }
        }
        return try result.get()
    }

    /// The same over raw bytes (a transport's buffer, without a copy).
    public static func inspect(_ bytes: UnsafeRawBufferPointer) throws(APNsPayloadError) -> APNsPayloadSummary {
        if bytes.isEmpty { throw .empty }
        var scanner = JSONScanner(bytes: bytes)
        return try scanner.scanTopLevel()
    }
}

private struct JSONScanner {
    let bytes: UnsafeRawBufferPointer
    var index = 0
    var depth = 0
    static let maximumDepth = 64

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func scanTopLevel() throws(APNsPayloadError) -> APNsPayloadSummary {
        skipWhitespace()
        guard peek() == UInt8(ascii: "{") else { throw .notJSONObject }
        var summary: APNsPayloadSummary?
        var sawAPS = false
        try scanObject { (scanner, key) throws(APNsPayloadError) in
            if key == "aps" {
                sawAPS = true
                summary = try scanner.scanAPSValue()
            } else {
                try scanner.skipValue()
            }
        }
        skipWhitespace()
        guard index == bytes.count else { throw .notJSONObject }
        guard sawAPS else { throw .missingAPSDictionary }
        guard let summary else { throw .missingAPSDictionary }
        return summary
    }

    /// Reads the value of `aps`; `nil` when it is not an object.
    mutating func scanAPSValue() throws(APNsPayloadError) -> APNsPayloadSummary? {
        skipWhitespace()
        guard peek() == UInt8(ascii: "{") else {
            try skipValue()
            return nil
        }
        var summary = APNsPayloadSummary(apsKeys: [], contentAvailable: nil)
        try scanObject { (scanner, key) throws(APNsPayloadError) in
            summary.apsKeys.insert(key)
            if key == "content-available" {
                scanner.skipWhitespace()
                let start = scanner.index
                try scanner.skipValue()
                summary.contentAvailable = scanner.integer(from: start, to: scanner.index)
            } else {
                try scanner.skipValue()
            }
        }
        return summary
    }

    func integer(from start: Int, to end: Int) -> Int? {
        var value = 0
        var i = start
        guard i < end else { return nil }
        while i < end {
            let c = bytes[i]
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int(c - UInt8(ascii: "0")))
            if o1 || o2 { return nil }
            value = s
            i += 1
        }
        return value
    }

    func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func expect(_ c: UInt8) throws(APNsPayloadError) {
        guard peek() == c else { throw .notJSONObject }
        index += 1
    }

    /// Scans `{ "key": value, ... }`, handing each key to `body`, which must consume the value.
    mutating func scanObject(
        _ body: (inout JSONScanner, String) throws(APNsPayloadError) -> Void
    ) throws(APNsPayloadError) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw .notJSONObject }
        try expect(UInt8(ascii: "{"))
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return
        }
        while true {
            skipWhitespace()
            let key = try scanString()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            try body(&self, key)
            skipWhitespace()
            guard let c = peek() else { throw .notJSONObject }
            index += 1
            if c == UInt8(ascii: ",") { continue }
            if c == UInt8(ascii: "}") { break }
            throw .notJSONObject
        }
        depth -= 1
    }

    mutating func skipValue() throws(APNsPayloadError) {
        skipWhitespace()
        guard let c = peek() else { throw .notJSONObject }
        switch c {
        case UInt8(ascii: "{"):
            try scanObject { (scanner, _) throws(APNsPayloadError) in try scanner.skipValue() }
        case UInt8(ascii: "["):
            depth += 1
            guard depth <= Self.maximumDepth else { throw .notJSONObject }
            index += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                index += 1
            } else {
                while true {
                    try skipValue()
                    skipWhitespace()
                    guard let d = peek() else { throw .notJSONObject }
                    index += 1
                    if d == UInt8(ascii: ",") { continue }
                    if d == UInt8(ascii: "]") { break }
                    throw .notJSONObject
                }
            }
            depth -= 1
        case UInt8(ascii: "\""):
            _ = try scanString(decode: false)
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: try skipNumber()
        }
    }

    mutating func literal(_ word: StaticString) throws(APNsPayloadError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw .notJSONObject }
        for i in 0..<count where bytes[index + i] != word.utf8Start[i] { throw .notJSONObject }
        index += count
    }

    mutating func skipNumber() throws(APNsPayloadError) {
        func isDigit(_ c: UInt8?) -> Bool { c.map { $0 >= 0x30 && $0 <= 0x39 } ?? false }
        if peek() == UInt8(ascii: "-") { index += 1 }
        guard isDigit(peek()) else { throw .notJSONObject }
        if peek() == UInt8(ascii: "0") {
            index += 1
        } else {
            while isDigit(peek()) { index += 1 }
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard isDigit(peek()) else { throw .notJSONObject }
            while isDigit(peek()) { index += 1 }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard isDigit(peek()) else { throw .notJSONObject }
            while isDigit(peek()) { index += 1 }
        }
    }

    /// Scans a string; returns its decoded value when `decode` (keys), else "".
    mutating func scanString(decode: Bool = true) throws(APNsPayloadError) -> String {
        try expect(UInt8(ascii: "\""))
        let start = index
        var hasEscape = false
        while true {
            index = JSONStringRun.end(bytes, from: index)
            guard let c = peek() else { throw .notJSONObject }
            if c == UInt8(ascii: "\"") { break }
            if c < 0x20 { throw .notJSONObject }
            // A backslash.
            hasEscape = true
            index += 1
            guard let e = peek() else { throw .notJSONObject }
            switch e {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                index += 1
            case UInt8(ascii: "u"):
                guard index + 4 < bytes.count else { throw .notJSONObject }
                for i in 1...4 where !bytes[index + i].isHexDigit { throw .notJSONObject }
                index += 5
            default: throw .notJSONObject
            }
        }
        let end = index
        index += 1
        guard decode else { return "" }
        let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        guard let text = String(utf8Validating: raw) else { throw .notJSONObject }
        return hasEscape ? Self.unescape(text) : text
    }

    /// Rare path: keys with escapes. Decodes the escapes JSON allows.
    static func unescape(_ text: String) -> String {
        var out = ""
        var units = Array(text.utf16)[...]
        var pendingHigh: UInt16?
        while let u = units.popFirst() {
            guard u == 0x5C, let e = units.popFirst() else {
                out.unicodeScalars.append(Unicode.Scalar(u).map { $0 } ?? "\u{FFFD}")
                continue
            }
            switch e {
            case 0x62: out += "\u{08}"
            case 0x66: out += "\u{0C}"
            case 0x6E: out += "\n"
            case 0x72: out += "\r"
            case 0x74: out += "\t"
            case 0x75:
                let hex = String(utf16CodeUnits: Array(units.prefix(4)), count: 4)
                units = units.dropFirst(4)
                let v = UInt16(hex, radix: 16) ?? 0xFFFD
                if (0xD800..<0xDC00).contains(v) {
                    pendingHigh = v
                } else if let high = pendingHigh, (0xDC00..<0xE000).contains(v) {
                    let scalar = 0x10000 + ((UInt32(high) - 0xD800) << 10) + (UInt32(v) - 0xDC00)
                    out.unicodeScalars.append(Unicode.Scalar(scalar) ?? "\u{FFFD}")
                    pendingHigh = nil
                } else {
                    out.unicodeScalars.append(Unicode.Scalar(v) ?? "\u{FFFD}")
                }
            default: out.unicodeScalars.append(Unicode.Scalar(e) ?? "\u{FFFD}")
            }
        }
        return out
    }
}

