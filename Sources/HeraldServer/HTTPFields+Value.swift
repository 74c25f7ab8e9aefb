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
    func hasPrefix(ignoringASCIICase prefix: String) -> Bool {
        var characters = utf8.makeIterator()
        for expected in prefix.utf8 {
            guard let byte = characters.next() else { return false }
            guard (0x41...0x5A).contains(byte) ? byte | 0x20 == expected : byte == expected else { return false }
        }
        return true
    }
}
