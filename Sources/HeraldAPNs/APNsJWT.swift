import Crypto
import Foundation
import Synchronization

/// An APNs token-signing key: the `.p8` private key with its key id and team id.
public struct APNsSigningKey: Sendable {
    public let keyID: String
    public let teamID: String
    let privateKey: P256.Signing.PrivateKey

    /// Loads a key from the PEM text of a `.p8` file.
    public init(pem: String, keyID: String, teamID: String) throws {
        self.privateKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
        self.keyID = keyID
        self.teamID = teamID
    }

    /// Loads a key from a `.p8` file on disk.
    public init(contentsOfFile path: String, keyID: String, teamID: String) throws {
        let pem = try String(contentsOfFile: path, encoding: .utf8)
        try self.init(pem: pem, keyID: keyID, teamID: teamID)
    }

    /// Wraps an existing key (the simulator's ephemeral key, tests).
    public init(privateKey: P256.Signing.PrivateKey, keyID: String, teamID: String) {
        self.privateKey = privateKey
        self.keyID = keyID
        self.teamID = teamID
    }

    /// The public half, for whoever verifies tokens (the simulator).
    public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }

    /// Signs an ES256 JWT `{alg, kid}.{iss, iat}` with `iat` in whole seconds.
    public func makeToken(issuedAt: Date) -> String {
        let header = #"{"alg":"ES256","kid":"\#(keyID)"}"#
        let claims = #"{"iss":"\#(teamID)","iat":\#(Int(issuedAt.timeIntervalSince1970))}"#
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        // P-256 signing cannot fail for a valid key and in-memory input.
        let signature = try! privateKey.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }
}

/// A minted provider token.
public struct APNsProviderToken: Sendable, Hashable {
    /// The JWT.
    public let jwt: String
    /// Its `iat`.
    public let issuedAt: Date
    /// `bearer <jwt>`, ready for the `authorization` header.
    public let authorizationHeader: String

    init(jwt: String, issuedAt: Date) {
        self.jwt = jwt
        self.issuedAt = issuedAt
        self.authorizationHeader = "bearer " + jwt
    }
}

/// One provider token per key, shared by every connection of that key.
///
/// Refreshes at `refreshInterval` (50 minutes) and never mints more often than
/// `minimumInterval` (20 minutes), even when APNs refuses the token: Apple answers
/// `TooManyProviderTokenUpdates` to providers that mint more often.
public final class APNsProviderTokenSource: Sendable {
    public let key: APNsSigningKey
    public let refreshInterval: Duration
    public let minimumInterval: Duration
    private let now: @Sendable () -> Date

    private struct State {
        var current: APNsProviderToken?
        var refreshRequested = false
        var minted = 0
    }
    private let state = Mutex(State())

    /// - Parameter now: the clock; tests inject one.
    public init(
        key: APNsSigningKey,
        refreshInterval: Duration = .seconds(50 * 60),
        minimumInterval: Duration = .seconds(20 * 60),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.key = key
        self.refreshInterval = refreshInterval
        self.minimumInterval = minimumInterval
        self.now = now
    }

    /// How many tokens this source has minted.
    public var mintedCount: Int { state.withLock { $0.minted } }

    /// The token to send now, minting one when there is none, it is 50 minutes old, or a
    /// refresh was requested and the 20-minute floor allows it.
    public func currentToken() -> APNsProviderToken {
        let now = self.now()
        return state.withLock { state in
            if let current = state.current {
                let age = now.timeIntervalSince(current.issuedAt)
                let due = age >= refreshInterval.seconds || (state.refreshRequested && age >= minimumInterval.seconds)
                if !due { return current }
            }
            let token = APNsProviderToken(jwt: key.makeToken(issuedAt: now), issuedAt: now)
            state.current = token
            state.refreshRequested = false
            state.minted += 1
            return token
        }
    }

    /// APNs refused `token` (403 ExpiredProviderToken/InvalidProviderToken): mint a new one
    /// as soon as the 20-minute floor allows.
    /// - Returns: true when the next `currentToken()` will be a different token.
    @discardableResult
    public func refreshRequested(after token: APNsProviderToken) -> Bool {
        let now = self.now()
        return state.withLock { state in
            guard let current = state.current, current == token else { return true }
            state.refreshRequested = true
            return now.timeIntervalSince(current.issuedAt) >= minimumInterval.seconds
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}

/// Base64url without padding (RFC 7515).
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        var s = Data(bytes).base64EncodedString()
        s = s.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while s.last == "=" { s.removeLast() }
        return s
    }

    public static func decode(_ text: Substring) -> [UInt8]? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map { Array($0) }
    }
}
