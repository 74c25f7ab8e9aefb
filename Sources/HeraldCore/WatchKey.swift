import KasiaProtocol
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
    public init(_ text: String) throws(WatchKeyError) {
        if text.hasPrefix("kaspa") {
            do {
                self = .kaspaAddress(try KaspaAddress(text))
            } catch {
                throw .invalidKaspaAddress(error)
            }
            return
        }
        guard let colon = text.firstIndex(of: ":") else { throw .unknownKind }
        let identifier = String(text[text.index(after: colon)...])
        guard !identifier.isEmpty, identifier.unicodeScalars.count <= Self.maximumIdentifierLength,
            identifier.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7f })
        else { throw .invalidIdentifier }
        switch text[..<colon] {
        case "conv": self = .conversation(identifier)
        case "session": self = .session(identifier)
        case "user": self = .user(identifier)
        default: throw .unknownKind
        }
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
