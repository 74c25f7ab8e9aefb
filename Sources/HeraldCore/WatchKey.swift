public import KasiaProtocol
/// What a device wants to hear about: a typed, validated string.
public enum WatchKey: Hashable, Sendable, CustomStringConvertible {
    /// A Kaspa address (`kaspa:…`, `kaspatest:…`), checksum-validated.
    case kaspaAddress(KaspaAddress)
    /// `conv:<hash>`: a conversation.
    case conversation(String)
    /// `session:<id>`: a messaging session.
    case session(String)
    /// `user:<id>`: an app user.
    case user(String)

    /// The longest identifier after `conv:`, `session:` or `user:`.
    public static let maximumIdentifierLength = 256

    /// Parses a watch key.
    ///
    /// The rule is the OpenAPI document's `^(conv|session|user):[^\u0000-\u0020\u007f]{1,256}$`,
    /// read over Unicode scalars as JSON Schema's patterns are: the kind ends at the first `:`
    /// scalar even when a combining mark follows it, and the identifier's length counts scalars.
    public init(_ text: String) throws(WatchKeyError) {
        if text.utf8.starts(with: "kaspa".utf8) {
            do {
                self = .kaspaAddress(try KaspaAddress(text))
            } catch {
                throw .invalidKaspaAddress(error)
            }
            return
        }
        let scalars = text.unicodeScalars
        guard let colon = scalars.firstIndex(of: ":") else { throw .unknownKind }
        let identifier = String(scalars[scalars.index(after: colon)...])
        guard !identifier.isEmpty, identifier.unicodeScalars.count <= Self.maximumIdentifierLength,
            identifier.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7f })
        else { throw .invalidIdentifier }
        let kind = Substring(scalars[..<colon]).utf8
        if kind.elementsEqual("conv".utf8) {
            self = .conversation(identifier)
        } else if kind.elementsEqual("session".utf8) {
            self = .session(identifier)
        } else if kind.elementsEqual("user".utf8) {
            self = .user(identifier)
        } else {
            throw .unknownKind
        }
    }

    /// Keys are equal when their canonical strings have the same bytes, as the store's indexes
    /// compare them: `e` followed by a combining accent and `é` are two keys, not one.
    public static func == (lhs: WatchKey, rhs: WatchKey) -> Bool {
        switch (lhs, rhs) {
        case (.kaspaAddress(let a), .kaspaAddress(let b)): a == b
        case (.conversation(let a), .conversation(let b)), (.session(let a), .session(let b)), (.user(let a), .user(let b)):
            a.utf8.elementsEqual(b.utf8)
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        var identifier: String
        switch self {
        case .kaspaAddress(let address):
            hasher.combine(0 as UInt8)
            hasher.combine(address)
            return
        case .conversation(let id): hasher.combine(1 as UInt8); identifier = id
        case .session(let id): hasher.combine(2 as UInt8); identifier = id
        case .user(let id): hasher.combine(3 as UInt8); identifier = id
        }
        identifier.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// The canonical string, as stored and indexed.
    public var description: String {
        switch self {
        case .kaspaAddress(let address): address.string
        case .conversation(let id): "conv:" + id
        case .session(let id): "session:" + id
        case .user(let id): "user:" + id
        }
    }
}

/// Why a string is not a watch key.
public enum WatchKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    case invalidKaspaAddress(KaspaAddressError)
    case unknownKind
    case invalidIdentifier

    public var description: String {
        switch self {
        case .invalidKaspaAddress(let e): "not a Kaspa address: \(e)"
        case .unknownKind: "a watch key is a Kaspa address, conv:<hash>, session:<id> or user:<id>"
        case .invalidIdentifier: "the identifier is empty, longer than \(WatchKey.maximumIdentifierLength) characters, or has spaces or control characters"
        }
    }
}
