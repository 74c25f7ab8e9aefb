import Crypto
public import Foundation
import HeraldPushCore
package import NIOSSL
import SwiftASN1
import X509

/// The simulator's TLS identity: an ephemeral CA and a leaf certificate for the loopback
/// names, made at start. Clients trust it through `ca.pem`.
public struct SimulatorTLSIdentity: Sendable {
    /// PEM of the CA certificate: the trust root for clients.
    public let caPEM: String
    package let leafPEM: String
    package let leafKeyPEM: String

    /// Makes a CA and a leaf valid for `localhost`, `127.0.0.1`, `::1` and `host` when it is
    /// another IP address (a simulator on 127.0.0.2 is a second origin on one machine).
    public static func generate(now: Date = Date(), host: String = "127.0.0.1") throws -> SimulatorTLSIdentity {
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            OrganizationName("Herald")
            // Unique per simulator: a client trusting two simulators' CAs (two Web Push origins)
            // must not take one CA for the other's issuer.
            CommonName("Herald Simulator CA " + UUID().uuidString.prefix(8))
        }
        let ca = try makeCertificate(
            key: caKey.publicKey, subject: caName, issuer: caName, issuerKey: caKey, now: now,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            })
        let leafKey = P256.Signing.PrivateKey()
        let leaf = try makeCertificate(
            key: leafKey.publicKey,
            subject: try DistinguishedName {
                OrganizationName("Herald")
                CommonName("localhost")
            },
            issuer: caName, issuerKey: caKey, now: now,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(names(host: host))
            })
        return SimulatorTLSIdentity(
            caPEM: try ca.serializeAsPEM().pemString,
            leafPEM: try leaf.serializeAsPEM().pemString,
            leafKeyPEM: leafKey.pemRepresentation)
    }

    /// The leaf's names: the loopback ones, and `host` when it is another IP address.
    private static func names(host: String) -> [GeneralName] {
        let loopback: [[UInt8]] = [[127, 0, 0, 1], [UInt8](repeating: 0, count: 15) + [1]]
        var addresses = loopback
        if let extra = IPAddressLiteral.bytes(host), !loopback.contains(extra) { addresses.append(extra) }
        return [.dnsName("localhost")] + addresses.map { .ipAddress(ASN1OctetString(contentBytes: ArraySlice($0))) }
    }

    /// A certificate valid from an hour ago for a year, signed with ECDSA-SHA256.
    private static func makeCertificate(
        key: P256.Signing.PublicKey, subject: DistinguishedName, issuer: DistinguishedName,
        issuerKey: P256.Signing.PrivateKey, now: Date, extensions: Certificate.Extensions
    ) throws -> Certificate {
        try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(365 * 86_400),
            issuer: issuer, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions, issuerPrivateKey: .init(issuerKey))
    }

    /// Writes `ca.pem` (the clients' trust root) into `directory`, made if missing; returns its path.
    public func writeCA(to directory: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = (directory as NSString).appendingPathComponent("ca.pem")
        // Ends in a newline, as PEM files do: `cat` of two simulators' files is a bundle.
        try (caPEM.hasSuffix("\n") ? caPEM : caPEM + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A server context offering ALPN `h2`; clients that offer no ALPN get HTTP/2 too.
    package func makeServerContext() throws -> NIOSSLContext {
        let certificate = try NIOSSLCertificate(bytes: Array(leafPEM.utf8), format: .pem)
        let key = try NIOSSLPrivateKey(bytes: Array(leafKeyPEM.utf8), format: .pem)
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
        tls.applicationProtocols = ["h2"]
        return try NIOSSLContext(configuration: tls)
    }
}
