public import Crypto
public import Foundation
import HeraldAPNs
import HeraldPushCore

/// A provider key the simulator trusts: a JWT must name its key id and team.
public struct SimulatorKey: Sendable {
    public var keyID: String
    public var teamID: String
    public var publicKey: P256.Signing.PublicKey

    public init(keyID: String, teamID: String, publicKey: P256.Signing.PublicKey) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKey = publicKey
    }

    /// Reads `KID:TEAM:PEMFILE`, as `herald mock-apns --public-key` takes it. The file
    /// may hold the public key or the `.p8` private key (whose public half is used).
    public init(argument: String) throws {
        let parts = argument.split(separator: ":", maxSplits: 2).map(String.init)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw HeraldConfigurationError(field: "--public-key", message: "expected KID:TEAM:PEMFILE, got \(argument)")
        }
        let pem = try String(contentsOfFile: parts[2], encoding: .utf8)
        if let key = try? P256.Signing.PublicKey(pemRepresentation: pem) {
            self.init(keyID: parts[0], teamID: parts[1], publicKey: key)
        } else if let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
            self.init(keyID: parts[0], teamID: parts[1], publicKey: key.publicKey)
        } else {
            throw HeraldConfigurationError(field: "--public-key", message: "\(parts[2]) holds no P-256 key")
        }
    }
}

/// How the simulator runs.
public struct APNsSimulatorConfiguration: Sendable {
    /// Where both ports listen (default loopback).
    public var host = "127.0.0.1"
    /// The production host's HTTP/2 port; 0 picks a free one.
    public var port = 2197
    /// The sandbox host's HTTP/2 port; 0 (the default) picks a free one.
    public var sandboxPort = 0
    /// The plain-HTTP control port; 0 picks a free one, nil opens none (`control(_:)` still answers).
    public var controlPort: Int? = 2198
    public var keys: [SimulatorKey] = []
    /// Topics accepted; empty accepts any topic.
    public var topics: Set<String> = []
    /// The stream limit once a connection has shown a valid JWT (Apple: 1,000).
    public var authenticatedMaxStreams = 1_000
    /// A provider token older than this is refused with ExpiredProviderToken (Apple: 1 hour).
    public var tokenLifetime: Duration = .seconds(3_600)
    /// Apple refuses a key's new token within 20 minutes of the previous one.
    public var tokenUpdateInterval: Duration = .seconds(20 * 60)
    /// How many accepted notifications are kept for `/notifications` (oldest dropped first).
    public var recordLimit = 1_000_000
    /// The simulator's clock.
    public var now: @Sendable () -> Date = { Date() }

    public init() {}
}
