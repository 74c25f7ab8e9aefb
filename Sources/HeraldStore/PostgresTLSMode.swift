public import Foundation
import NIOSSL
import PostgresNIO

/// TLS to PostgreSQL as libpq reads a connection URL's `sslmode` and `sslrootcert`, so a URL a
/// managed database hands out works as it is, with two differences where libpq's choice lets a
/// man in the middle read or change the traffic:
/// - `disable`: no TLS;
/// - `prefer`: TLS when the server offers it, without checking its certificate — plaintext when
///   anyone on the path says the server has none;
/// - no `sslmode`: `prefer` for a loopback host (as libpq), `require` for any other: a refused
///   TLS then stops the start rather than continuing in plaintext (`sslmode=prefer` or `disable`
///   says so outright);
/// - `require`: TLS or nothing, without checking the certificate — unless `sslrootcert` is
///   given, which makes it `verify-ca`, as libpq does;
/// - `verify-ca`: TLS, the certificate signed by `sslrootcert`, which it needs (the system's roots
///   without a host check would take any public CA's certificate for any name);
/// - `verify-full`: TLS, the certificate signed by `sslrootcert` (else the system's roots) and
///   naming the host.
public struct PostgresTLSMode: Sendable, Hashable {
    public enum Mode: String, Sendable {
        case disable, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    public var mode: Mode
    public var rootCertificatePath: String?

    /// Reads `sslmode` and `sslrootcert`; any other parameter is refused, so a misspelling is not
    /// silently a plain connection.
    /// - Parameter host: the server's host, for the default mode (loopback: `prefer`; else `require`).
    public init(query: [URLQueryItem], host: String = "localhost") throws {
        mode = Self.isLoopback(host) ? .prefer : .require
        for item in query {
            switch item.name {
            case "sslmode":
                guard let value = item.value, let parsed = Mode(rawValue: value) else {
                    throw PostgresStoreError("sslmode is disable, prefer, require, verify-ca or verify-full, not \(item.value ?? "empty")")
                }
                mode = parsed
            case "sslrootcert":
                guard let path = item.value, !path.isEmpty else { throw PostgresStoreError("sslrootcert is a file of PEM certificates") }
                guard FileManager.default.isReadableFile(atPath: path) else { throw PostgresStoreError("sslrootcert \(path) is not readable") }
                rootCertificatePath = path
            default:
                throw PostgresStoreError("\(item.name) is not a connection parameter Herald reads (sslmode, sslrootcert)")
            }
        }
        if mode == .require, rootCertificatePath != nil { mode = .verifyCA }
        if mode == .verifyCA, rootCertificatePath == nil {
            throw PostgresStoreError("sslmode=verify-ca needs sslrootcert (the database's CA): the system's roots without a host check would trust any public CA's certificate for any name; or use verify-full")
        }
    }

    /// `localhost`, `127.0.0.0/8` and `::1`: traffic that never leaves the machine.
    static func isLoopback(_ host: String) -> Bool {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        return bare == "localhost" || bare == "::1" || bare.hasPrefix("127.")
    }

    /// postgres-nio's TLS setting for this mode.
    var tls: PostgresClient.Configuration.TLS {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let rootCertificatePath { configuration.trustRoots = .file(rootCertificatePath) }
        switch mode {
        case .disable:
            return .disable
        case .prefer, .require:
            configuration.certificateVerification = .none
            return mode == .prefer ? .prefer(configuration) : .require(configuration)
        case .verifyCA:
            configuration.certificateVerification = .noHostnameVerification
            return .require(configuration)
        case .verifyFull:
            configuration.certificateVerification = .fullVerification
            return .require(configuration)
        }
    }
}
