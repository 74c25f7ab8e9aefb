#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address written as text, as the SSRF policy, the trusted-proxy lists, TLS's
/// server name and the simulators' certificates read it.
public enum IPAddressLiteral {
    /// The address's 4 or 16 bytes, or nil when `text` is a name (or nothing).
    public static func bytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }
}
