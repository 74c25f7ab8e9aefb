import HeraldPushCore

/// A block of IP addresses, `10.0.0.0/8` or `::1/128` (a bare address is a block of one).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The network's address bytes: 4 for IPv4, 16 for IPv6.
    let bytes: [UInt8]
    let prefixLength: Int

    /// Parses `address[/prefix]`; nil when it is neither IPv4 nor IPv6, or the prefix is out of range.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bytes = IPAddressLiteral.bytes(String(parts[0])) else { return nil }
        let bits = bytes.count * 8
        if parts.count == 2 {
            guard let prefix = Int(parts[1]), (0...bits).contains(prefix) else { return nil }
            prefixLength = prefix
        } else {
            prefixLength = bits
        }
        self.bytes = bytes
    }

    public var description: String { "\(Self.text(of: bytes))/\(prefixLength)" }

    /// Whether `address` (in text form) is inside this block. An IPv4 peer of a listener on `::`
    /// arrives IPv4-mapped (`::ffff:10.0.0.1`): it is the IPv4 address, and IPv4 blocks hold it.
    public func contains(_ address: String) -> Bool {
        guard var other = IPAddressLiteral.bytes(address) else { return false }
        if bytes.count == 4, other.count == 16, other[0..<10].allSatisfy({ $0 == 0 }), other[10] == 0xFF, other[11] == 0xFF {
            other = Array(other[12...])
        }
        guard other.count == bytes.count else { return false }
        var remaining = prefixLength
        for (a, b) in zip(bytes, other) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            if a & mask != b & mask { return false }
            remaining -= 8
        }
        return true
    }

    private static func text(of bytes: [UInt8]) -> String {
        bytes.count == 4 ? bytes.map(String.init).joined(separator: ".") : bytes.map { String($0, radix: 16) }.joined(separator: ":")
    }
}

/// The header a trusted reverse proxy writes the client's address into
/// (`HERALD_TRUSTED_PROXY_HEADER`). Only that one is read: a proxy passes the other on as the
/// client sent it, so reading both would let a client choose its own address.
public enum ProxyHeader: String, Sendable {
    case xForwardedFor = "x-forwarded-for"
    case forwarded
}

/// Which client a request comes from, for per-client limits. A proxy's word about the client
/// (`Forwarded`, `X-Forwarded-For`) counts only when the peer is a proxy the operator trusts;
/// otherwise anyone could pick their own bucket by sending the header.
enum ClientAddress {
    /// The client: the peer itself, or — when the peer is trusted — the nearest address in the
    /// forwarding chain that is not a trusted proxy. An entry no proxy could have meant as an
    /// address (`unknown`, an obfuscated name) ends the walk: the hop that wrote it answers for it.
    static func of(peer: String?, forwarded: String?, forwardedFor: String?, trusted: [IPNetwork], header: ProxyHeader = .xForwardedFor) -> String {
        guard let peer else { return "unknown" }
        guard !trusted.isEmpty, trusted.contains(where: { $0.contains(peer) }) else { return peer }
        let chain: [String] = switch header {
        case .forwarded: forwarded.map(forwardedFors) ?? []
        case .xForwardedFor: forwardedFor.map { $0.split(separator: ",").map { bare(trim(String($0))) } } ?? []
        }
        // Right to left: the addresses each trusted hop saw; the first untrusted one is the client.
        var nearest = peer
        for entry in chain.reversed() {
            guard IPAddressLiteral.bytes(entry) != nil else { break }
            if !trusted.contains(where: { $0.contains(entry) }) { return entry }
            nearest = entry
        }
        return nearest
    }

    /// The rate-limit key of an address: IPv4 as it is, IPv6 by its /64 — which one subscriber
    /// holds whole, so a client cannot take a fresh bucket per address — and an IPv4-mapped one as IPv4.
    static func bucket(_ address: String) -> String {
        guard let bytes = IPAddressLiteral.bytes(address), bytes.count == 16 else { return address }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return bytes[12...].map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    /// An address without the brackets and port a proxy may write around it (`[2001:db8::1]:443`, `192.0.2.1:80`).
    static func bare(_ value: String) -> String {
        if value.hasPrefix("["), let close = value.firstIndex(of: "]") {
            return String(value[value.index(after: value.startIndex)..<close])
        }
        if value.filter({ $0 == ":" }).count == 1, let colon = value.firstIndex(of: ":") { return String(value[..<colon]) }
        return value
    }

    /// The `for=` addresses of an RFC 7239 `Forwarded` header, in order, without quotes, brackets or ports.
    static func forwardedFors(_ header: String) -> [String] {
        header.split(separator: ",").compactMap { element in
            for pair in element.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, trim(String(parts[0])).lowercased() == "for" else { continue }
                var value = trim(String(parts[1]))
                if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
                return bare(value)
            }
            return nil
        }
    }

    private static func trim(_ text: String) -> String {
        String(text.drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}
