extension String {
    /// `bytes` as a string if they are well-formed UTF-8; nil otherwise.
    ///
    /// The standard library's `String(validating:as:)` is generic and, outside the standard
    /// library, runs unspecialized: every call looks up type metadata (38 calls and about 37,000
    /// instructions a Matrix notify, `Benchmarks/instructions.sh`). ASCII, nearly every string a
    /// push carries, is checked here and copied at once; anything else is validated the standard way.
    @inlinable
    package init?(utf8Validating bytes: UnsafeBufferPointer<UInt8>) {
        var ascii = true
        for byte in bytes where byte >= 0x80 {
            ascii = false
            break
        }
        if ascii {
            self = String(decoding: bytes, as: UTF8.self)
        } else if let text = String(validating: bytes, as: UTF8.self) {
            self = text
        } else {
            return nil
        }
    }

    /// `bytes` as a string if they are well-formed UTF-8; nil otherwise.
    @inlinable
    package init?(utf8Validating bytes: UnsafeRawBufferPointer) {
        self.init(utf8Validating: bytes.assumingMemoryBound(to: UInt8.self))
    }
}
