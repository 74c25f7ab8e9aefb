#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
public import Foundation

/// A subscription's push endpoint (RFC 8030 push resource): the device's identity for Web Push.
public struct WebPushEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// UnifiedPush caps endpoints at 1,000 bytes.
    public static let maximumLength = 1_000

    public let url: URL
    /// Lowercased, without IPv6 brackets.
    public let host: String
    /// The URL's port, else 443 (80 for `http`).
    public let port: Int
    /// `host[:port]`, the port only when not the scheme's default, IPv6 in brackets: the `Host`
    /// (HTTP/1.1) or `:authority` (HTTP/2) of a push.
    public let authority: String
    /// `https://host[:port]`: the push service's origin, the VAPID `aud`.
    public let origin: String
    /// The request target: the path and query as registered (never re-encoded), `/` for none.
    public let target: String

    /// - Parameter allowHTTP: `http://` too (a test configuration only; push services are HTTPS).
    /// - Throws: `WebPushEndpointError` saying what is wrong.
    public init(_ text: String, allowHTTP: Bool = false) throws(WebPushEndpointError) {
        guard !text.isEmpty, text.utf8.count <= Self.maximumLength else { throw .length }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else { throw .notURL }
        guard scheme == "https" || (allowHTTP && scheme == "http") else { throw .scheme }
        guard url.user == nil, url.password == nil, url.fragment == nil, url.query == nil || !url.query!.isEmpty else { throw .notURL }
        guard let rawHost = url.host, !rawHost.isEmpty else { throw .notURL }
        self.url = url
        host = rawHost.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        let defaultPort = scheme == "http" ? 80 : 443
        port = url.port ?? defaultPort
        authority = (host.contains(":") ? "[\(host)]" : host) + (port == defaultPort ? "" : ":\(port)")
        origin = "\(scheme)://\(authority)"
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let path = components?.percentEncodedPath ?? ""
        target = (path.isEmpty ? "/" : path) + (components?.percentEncodedQuery.map { "?" + $0 } ?? "")
    }

    public var description: String { url.absoluteString }
}

/// Why an endpoint is refused.
public enum WebPushEndpointError: Error, Sendable, Hashable, CustomStringConvertible {
    case length, notURL, scheme
    /// It resolves to (or is) an address inside: loopback, private, link-local, multicast, reserved.
    case internalAddress(String)
    /// Its host resolves to no address.
    case unresolved(String)
    /// Its port is not one push services use (443, or one the operator allows).
    case port(Int)
    /// Its host could not be looked up now (the DNS server failed or did not answer in time):
    /// a passing failure, tried again later.
    case unavailable(String)

    public var description: String {
        switch self {
        case .length: "endpoint is 1 to 1,000 bytes"
        case .notURL: "endpoint is an absolute URL with a host, without user info or fragment"
        case .scheme: "endpoint is an https URL"
        case .internalAddress(let address): "endpoint reaches \(address), an address Herald does not send to"
        case .unresolved(let host): "endpoint's host \(host) resolves to no address"
        case .port(let port): "endpoint's port \(port) is not one Herald sends to (443, or a host:port the operator allows)"
        case .unavailable(let host): "endpoint's host \(host) could not be looked up now (DNS did not answer); try again later"
        }
    }
}

/// Where Herald sends Web Push requests: never to an address inside a network (loopback,
/// private, carrier-grade NAT, link-local, multicast, unspecified, reserved, documentation), so
/// a registered endpoint cannot make Herald call its own neighbours (SSRF), unless the operator
/// allows the host (a test simulator on 127.0.0.1).
public struct WebPushAddressPolicy: Sendable {
    /// Hosts sent to whatever they resolve to, lowercased: `host` (any port) or `host:port`.
    public var allowedHosts: Set<String>

    public init(allowedHosts: Set<String> = []) {
        self.allowedHosts = Set(allowedHosts.map { $0.lowercased() })
    }

    /// Checks `endpoint`'s host against the addresses it resolved to (all of them: one inside is
    /// enough to refuse, since a later lookup may return it).
    public func check(_ endpoint: WebPushEndpoint, resolvedTo addresses: [[UInt8]]) throws(WebPushEndpointError) {
        if allows(endpoint) { return }
        guard !addresses.isEmpty else { throw .internalAddress("no address") }
        for address in addresses where !Self.isPublic(address) { throw .internalAddress(Self.format(address)) }
        // Push services answer on 443: any other port on a public host is a way to reach
        // something that is not one (a mail server, a database).
        guard endpoint.port == 443 else { throw .port(endpoint.port) }
    }

    /// Whether the operator allowed the endpoint's host (or host and port) outright.
    public func allows(_ endpoint: WebPushEndpoint) -> Bool {
        let host = endpoint.host.contains(":") ? "[\(endpoint.host)]" : endpoint.host
        return allowedHosts.contains(endpoint.host) || allowedHosts.contains("\(host):\(endpoint.port)")
    }

    /// Whether an address (4 or 16 bytes) is on the public internet.
    public static func isPublic(_ a: [UInt8]) -> Bool {
        if a.count == 4 { return isPublicV4(a) }
        guard a.count == 16 else { return false }
        // IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) carry an IPv4 address.
        if a[0..<10].allSatisfy({ $0 == 0 }) && a[10] == 0xff && a[11] == 0xff { return isPublicV4(Array(a[12...])) }
        if a[0..<12] == [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0] { return isPublicV4(Array(a[12...])) }
        if a[0] == 0x20 && a[1] == 0x02 { return isPublicV4(Array(a[2..<6])) }
        // ::/96 (IPv4-compatible, `::a.b.c.d`, with :: and ::1), ::ffff:0:0:0/96 (IPv4-translated),
        // 64:ff9b:1::/48 (local-use NAT64) and Teredo (2001::/32, its IPv4 hidden): none is a push service.
        if a[0..<12].allSatisfy({ $0 == 0 }) { return false }
        if a[0..<8].allSatisfy({ $0 == 0 }) && a[8] == 0xff && a[9] == 0xff && a[10] == 0 && a[11] == 0 { return false }
        if a[0..<6] == [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01] { return false }
        // 2001::/23, IETF protocol assignments: Teredo, 2001:2::/48 benchmarking, ORCHID; no push service.
        if a[0] == 0x20 && a[1] == 0x01 && a[2] & 0xfe == 0 { return false }
        if a[0] == 0x3f && a[1] == 0xff && a[2] & 0xf0 == 0 { return false }  // 3fff::/20 documentation (RFC 9637)
        if a[0] == 0x5f && a[1] == 0x00 { return false }  // 5f00::/16 segment routing SIDs (RFC 9602)
        if a[0] & 0xfe == 0xfc { return false }  // fc00::/7 unique local
        if a[0] == 0xfe && a[1] & 0xc0 == 0x80 { return false }  // fe80::/10 link-local
        if a[0] == 0xfe && a[1] & 0xc0 == 0xc0 { return false }  // fec0::/10 site-local (deprecated)
        if a[0] == 0xff { return false }  // multicast
        if a[0..<4] == [0x20, 0x01, 0x0d, 0xb8] { return false }  // 2001:db8::/32 documentation
        if a[0..<8] == [0x01, 0, 0, 0, 0, 0, 0, 0] { return false }  // 100::/64 discard
        return true
    }

    private static func isPublicV4(_ a: [UInt8]) -> Bool {
        switch (a[0], a[1]) {
        case (0, _), (10, _), (127, _): return false
        case (100, 64...127): return false  // carrier-grade NAT
        case (169, 254): return false
        case (172, 16...31): return false
        case (192, 168): return false
        case (192, 0) where a[2] == 0 || a[2] == 2: return false  // IETF protocol assignments, TEST-NET-1
        case (192, 88) where a[2] == 99: return false  // 6to4 relay anycast (deprecated)
        case (198, 18...19): return false  // benchmarking
        case (198, 51) where a[2] == 100: return false  // TEST-NET-2
        case (203, 0) where a[2] == 113: return false  // TEST-NET-3
        case (224...255, _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }

    /// The usual text form of an address.
    public static func format(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = address.count == 4 ? AF_INET : AF_INET6
        let ok = address.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) } != nil
        return ok ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : address.map { String($0) }.joined(separator: ".")
    }
}
