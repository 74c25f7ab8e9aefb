import Foundation
import NIOSSL
import PostgresNIO

/// TLS to PostgreSQL as libpq reads a connection URL's `sslmode` and `sslrootcert`, so a URL a
/// managed database hands out works as it is:
/// - `disable`: no TLS;
/// - `prefer` (the default): TLS when the server offers it, without checking its certificate;
/// - `require`: TLS or nothing, without checking the certificate — unless `sslrootcert` is
///   given, which makes it `verify-ca`, as libpq does;
/// - `verify-ca`: TLS, the certificate signed by `sslrootcert` (else the system's roots);
/// - `verify-full`: that, and the certificate names the host.
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
    public init(query: [URLQueryItem]) throws {
        mode = .prefer
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
