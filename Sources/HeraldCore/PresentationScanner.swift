/// Reads a push document's presentation (`aps`' `sound`, `category`, `interruption-level`,
/// `relevance-score` and `badge`) straight from its bytes, as the `aps` members a sealed alert
/// carries outside the seal (`,"sound":"default",…`), without building the document: a sealed
/// push of one event pays this once, so it is a scan of the bytes and a copy of five values.
/// What `PushPresentation(aps:)` would not take (another type, a level Apple does not know, a
/// badge out of range) is left out; a document that is not a JSON object gives nothing.
enum PresentationScanner {
    static func apsMembers(of document: [UInt8]) -> [UInt8] {
        document.withUnsafeBufferPointer { bytes in
            var scanner = Cursor(bytes: bytes)
            guard let aps = scanner.member(named: apsKey), bytes[aps.lowerBound] == UInt8(ascii: "{") else { return [] }
            var values: [Range<Int>?] = Array(repeating: nil, count: keys.count)
            var inner = Cursor(bytes: bytes, at: aps.lowerBound)
            inner.forEachMember { key, value in
                if let k = keys.firstIndex(where: { $0.elementsEqual(bytes[key]) }), values[k] == nil { values[k] = value }
                return true
            }
            var out: [UInt8] = []
            out.reserveCapacity(128)
            for (k, range) in values.enumerated() {
                guard let range, accepts(k, bytes[range]) else { continue }
                out.append(UInt8(ascii: ","))
                out += quotedKeys[k]
                out.append(UInt8(ascii: ":"))
                out += bytes[range]
            }
            return out
        }
    }

    /// The keys, in the order a sealed alert writes them (`PushPresentation.apsKeys`).
    static let keys = PushPresentation.apsKeys.map { Array($0.utf8) }
    static let quotedKeys = PushPresentation.apsKeys.map { Array("\"\($0)\"".utf8) }
    static let apsKey = Array("aps".utf8)
    static let levels = PushPresentation.InterruptionLevel.allCases.map { Array("\"\($0.rawValue)\"".utf8) }

    /// Whether the raw value of key `k` is what `PushPresentation(aps:)` takes.
    private static func accepts(_ k: Int, _ value: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard let first = value.first else { return false }
        switch k {
        case 0, 1: return first == UInt8(ascii: "\"")  // sound, category: a string
        case 2: return levels.contains { $0.elementsEqual(value) }
        case 3: return (first == UInt8(ascii: "-") || (48...57).contains(first)) && value.allSatisfy(isNumberByte)
        default:  // badge: a whole number 0…99,999
            return value.count <= 5 && value.allSatisfy { (48...57).contains($0) } && (value.count == 1 || first != UInt8(ascii: "0"))
        }
    }

    private static func isNumberByte(_ b: UInt8) -> Bool {
        (48...57).contains(b) || b == UInt8(ascii: "-") || b == UInt8(ascii: "+") || b == UInt8(ascii: ".") || b == UInt8(ascii: "e") || b == UInt8(ascii: "E")
    }

    /// A position in the bytes, reading an object's members: a key's bytes (without quotes;
    /// escapes left as they are) and its value's range.
    struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        var at: Int

        init(bytes: UnsafeBufferPointer<UInt8>, at: Int = 0) {
            self.bytes = bytes
            self.at = at
        }

        /// The value of the top-level object's first member named `name`.
        mutating func member(named name: [UInt8]) -> Range<Int>? {
            var found: Range<Int>?
            let bytes = self.bytes
            // The first one: the rest of the document (a Kasia payload, say) is not read.
            forEachMember { key, value in
                if name.elementsEqual(bytes[key]) { found = value }
                return found == nil
            }
            return found
        }

        /// Calls `body` with each member of the object at the cursor until it returns false; stops
        /// at the first byte it does not expect.
        mutating func forEachMember(_ body: (Range<Int>, Range<Int>) -> Bool) {
            skipSpace()
            guard take(UInt8(ascii: "{")) else { return }
            skipSpace()
            if take(UInt8(ascii: "}")) { return }
            while at < bytes.count {
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\""), let keyEnd = stringEnd(from: at) else { return }
                let key = (at + 1)..<(keyEnd - 1)
                at = keyEnd
                skipSpace()
                guard take(UInt8(ascii: ":")) else { return }
                skipSpace()
                let start = at
                guard let end = valueEnd(from: at) else { return }
                guard body(key, start..<end) else { return }
                at = end
                skipSpace()
                if take(UInt8(ascii: ",")) { continue }
                return
            }
        }

        private mutating func take(_ byte: UInt8) -> Bool {
            guard at < bytes.count, bytes[at] == byte else { return false }
            at += 1
            return true
        }

        private mutating func skipSpace() {
            while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 { at += 1 }
        }

        /// The index after the string starting at `i` (its opening quote), or nil.
        private func stringEnd(from i: Int) -> Int? {
            var j = i + 1
            while j < bytes.count {
                switch bytes[j] {
                case UInt8(ascii: "\\"): j += 2
                case UInt8(ascii: "\""): return j + 1
                case 0..<0x20: return nil
                default: j += 1
                }
            }
            return nil
        }

        /// The index after the value starting at `i`, or nil.
        private func valueEnd(from i: Int) -> Int? {
            guard i < bytes.count else { return nil }
            switch bytes[i] {
            case UInt8(ascii: "\""): return stringEnd(from: i)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                var j = i
                while j < bytes.count {
                    switch bytes[j] {
                    case UInt8(ascii: "\""):
                        guard let end = stringEnd(from: j) else { return nil }
                        j = end
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 { return j + 1 }
                    default: break
                    }
                    j += 1
                }
                return nil
            default:
                var j = i
                while j < bytes.count, !",}] \n\r\t".utf8.contains(bytes[j]) { j += 1 }
                return j > i ? j : nil
            }
        }
    }
}
