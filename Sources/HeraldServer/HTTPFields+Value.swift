import HTTPTypes

extension HTTPFields {
    /// The value of the field `name`, as `self[name]` gives it, for less: a field given once
    /// is read where it is, and only a repeated one goes through the subscript, which joins
    /// them through a lazy sequence generic over HTTPTypes' module (some 4,000 instructions a
    /// lookup, three on each publish).
    func value(_ name: HTTPField.Name) -> String? {
        var found: String?
        for field in self where field.name == name {
            if found != nil { return self[name] }
            found = field.value
        }
        return found
    }
}

extension String {
    /// Whether this starts with `prefix` (lowercase ASCII) in any case of its ASCII letters,
    /// without the lowercased copy `lowercased().hasPrefix(prefix)` makes.
    func hasPrefix(ignoringASCIICase prefix: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        // Over the contiguous UTF-8: stepping `utf8` costs more than the copy it saves.
        var text = self
        return text.withUTF8 { bytes in
            bytes.count >= expected.count
                && zip(bytes, expected).allSatisfy { byte, lower in (byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte) == lower }
        }
    }
}
