import NIOCore
import NIOHPACK

/// HPACK (RFC 7541) for a client's request headers, without Huffman coding.
///
/// A push repeats most of its headers (the provider token, topic, push type, authority), so a
/// header marked `.indexable` is entered in the dynamic table once and sent as its index after;
/// the ones that change each time (`:path`, `apns-id`) are marked `.nonIndexable` and go as
/// literals, naming a static-table entry where one has their name. The table is a few entries,
/// each header looked for first where it was found in the last block, then searched in order;
/// the server's SETTINGS_HEADER_TABLE_SIZE bounds it.
struct HeaderBlockEncoder {
    /// HTTP/2's default table size, and the most this encoder uses whatever a server allows.
    static let defaultTableSize = 4_096

    private struct Entry {
        var name: String
        var value: String
        var size: Int
    }

    /// Newest first: index 62 is `entries[0]`.
    private var entries: [Entry] = []
    private var tableSize = 0
    private(set) var maximumTableSize = HeaderBlockEncoder.defaultTableSize
    /// Table size updates owed at the start of the next block: the smallest since the last
    /// block, then the current, if they differ (RFC 7541 §4.2).
    private var smallestSinceLastBlock: Int?
    /// Where a block's nth indexable header was found last: a dynamic-table position or a
    /// static-table entry. A push repeats the last one's headers in the same order.
    private enum Hint {
        case table(Int)
        case staticEntry(Int)
    }
    private var hints: [Hint?] = []
    private var scratch: [UInt8] = []

    init() {}

    /// Follows the server's SETTINGS_HEADER_TABLE_SIZE, never above the default.
    mutating func setMaximumTableSize(_ size: Int) {
        let size = min(max(size, 0), Self.defaultTableSize)
        guard size != maximumTableSize || smallestSinceLastBlock != nil else { return }
        smallestSinceLastBlock = min(smallestSinceLastBlock ?? maximumTableSize, size)
        maximumTableSize = size
        evict(toFit: 0)
    }

    /// Appends the header block for `headers` to `out`, after the pseudo-headers of `request` if
    /// there is one.
    mutating func encode(_ headers: HPACKHeaders, request: HTTP2OutgoingRequest? = nil, into out: inout ByteBuffer) {
        // Built in an array and written once: a `ByteBuffer` write per byte checks its storage's
        // uniqueness and capacity each time. The array is the encoder's, kept between blocks.
        var block: [UInt8] = []
        swap(&block, &scratch)
        block.removeAll(keepingCapacity: true)
        defer { swap(&block, &scratch) }
        if let smallest = smallestSinceLastBlock {
            if smallest < maximumTableSize { Self.writeInteger(smallest, prefix: 5, pattern: 0x20, into: &block) }
            Self.writeInteger(maximumTableSize, prefix: 5, pattern: 0x20, into: &block)
            smallestSinceLastBlock = nil
        }
        var ordinal = 0
        request?.forEachPseudoHeader { append(name: $0, value: $1, $2, ordinal: &ordinal, into: &block) }
        for header in headers { append(name: header.name, value: header.value, header.indexable, ordinal: &ordinal, into: &block) }
        out.writeBytes(block)
    }

    /// One header's representation; `ordinal` counts the block's indexable headers.
    private mutating func append(name: String, value: String, _ indexing: HPACKIndexing, ordinal: inout Int, into block: inout [UInt8]) {
        switch indexing {
        case .indexable:
            appendIndexable(name: name, value: value, ordinal: ordinal, into: &block)
            ordinal += 1
        case .nonIndexable: appendLiteral(name: name, value: value, pattern: 0x00, into: &block)
        case .neverIndexed: appendLiteral(name: name, value: value, pattern: 0x10, into: &block)
        }
    }

    private mutating func appendIndexable(name: String, value: String, ordinal: Int, into out: inout [UInt8]) {
        // The entry this header matched last time is looked at first, before a search.
        switch ordinal < hints.count ? hints[ordinal] : nil {
        case .table(let position)? where position < entries.count && entries[position].name == name && entries[position].value == value:
            return Self.writeInteger(62 + position, prefix: 7, pattern: 0x80, into: &out)
        case .staticEntry(let i)? where Self.staticEntries[i].name == name && Self.staticEntries[i].value == value:
            return Self.writeInteger(Self.staticEntries[i].index, prefix: 7, pattern: 0x80, into: &out)
        default: break
        }
        for (position, entry) in entries.enumerated() where entry.name == name && entry.value == value {
            hint(ordinal, .table(position))
            return Self.writeInteger(62 + position, prefix: 7, pattern: 0x80, into: &out)
        }
        if let i = Self.staticEntries.firstIndex(where: { $0.name == name && $0.value == value }) {
            hint(ordinal, .staticEntry(i))
            return Self.writeInteger(Self.staticEntries[i].index, prefix: 7, pattern: 0x80, into: &out)
        }
        let size = name.utf8.count + value.utf8.count + 32
        guard size <= maximumTableSize else {
            // Would empty the table and not fit: a literal that leaves it alone.
            return appendLiteral(name: name, value: value, pattern: 0x00, into: &out)
        }
        // Literal with incremental indexing (§6.2.1), then into the table as the decoder does.
        if let nameIndex = Self.staticNameIndex[name] {
            Self.writeInteger(nameIndex, prefix: 6, pattern: 0x40, into: &out)
        } else {
            out.append(0x40)
            Self.writeString(name, into: &out)
        }
        Self.writeString(value, into: &out)
        evict(toFit: size)
        entries.insert(Entry(name: name, value: value, size: size), at: 0)
        tableSize += size
        hint(ordinal, .table(0))
    }

    /// Where the `ordinal`th indexable header of a block was found.
    private mutating func hint(_ ordinal: Int, _ hint: Hint) {
        // A request has a handful; past 64 a block's headers are searched for without a hint.
        guard ordinal < 64 else { return }
        // Ordinals not found yet (a header too large for the table goes as a literal) hint nowhere.
        if ordinal >= hints.count { hints.append(contentsOf: repeatElement(nil, count: ordinal + 1 - hints.count)) }
        hints[ordinal] = hint
    }

    /// A literal without indexing (pattern 0x00) or never indexed (0x10), §6.2.2 – 6.2.3.
    private func appendLiteral(name: String, value: String, pattern: UInt8, into out: inout [UInt8]) {
        if let nameIndex = Self.staticNameIndex[name] {
            Self.writeInteger(nameIndex, prefix: 4, pattern: pattern, into: &out)
        } else {
            out.append(pattern)
            Self.writeString(name, into: &out)
        }
        Self.writeString(value, into: &out)
    }

    /// Drops the oldest entries until `incoming` more bytes fit (§4.4).
    private mutating func evict(toFit incoming: Int) {
        while tableSize + incoming > maximumTableSize, let oldest = entries.popLast() {
            tableSize -= oldest.size
        }
    }

    /// A string literal without Huffman coding (§5.2).
    private static func writeString(_ string: String, into out: inout [UInt8]) {
        writeInteger(string.utf8.count, prefix: 7, pattern: 0, into: &out)
        out.append(contentsOf: string.utf8)
    }

    /// An integer with an N-bit prefix (§5.1), its first byte carrying `pattern` above the prefix.
    static func writeInteger(_ value: Int, prefix: Int, pattern: UInt8, into out: inout [UInt8]) {
        let limit = (1 << prefix) - 1
        guard value >= limit else {
            out.append(pattern | UInt8(value))
            return
        }
        out.append(pattern | UInt8(limit))
        var rest = value - limit
        while rest >= 128 {
            out.append(UInt8(rest & 0x7f | 0x80))
            rest >>= 7
        }
        out.append(UInt8(rest))
    }

    /// The static table's entries with a value a request may carry (Appendix A).
    private static let staticEntries: [(index: Int, name: String, value: String)] = [
        (2, ":method", "GET"), (3, ":method", "POST"), (4, ":path", "/"), (5, ":path", "/index.html"),
        (6, ":scheme", "http"), (7, ":scheme", "https"), (16, "accept-encoding", "gzip, deflate"),
    ]

    /// Each static-table name's first index (Appendix A).
    static let staticNameIndex: [String: Int] = {
        let names = [
            ":authority", ":method", ":method", ":path", ":path", ":scheme", ":scheme", ":status", ":status", ":status", ":status",
            ":status", ":status", ":status", "accept-charset", "accept-encoding", "accept-language", "accept-ranges", "accept",
            "access-control-allow-origin", "age", "allow", "authorization", "cache-control", "content-disposition",
            "content-encoding", "content-language", "content-length", "content-location", "content-range", "content-type", "cookie",
            "date", "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since", "if-none-match", "if-range",
            "if-unmodified-since", "last-modified", "link", "location", "max-forwards", "proxy-authenticate", "proxy-authorization",
            "range", "referer", "refresh", "retry-after", "server", "set-cookie", "strict-transport-security", "transfer-encoding",
            "user-agent", "vary", "via", "www-authenticate",
        ]
        var index: [String: Int] = [:]
        for (offset, name) in names.enumerated() where index[name] == nil { index[name] = offset + 1 }
        return index
    }()
}
