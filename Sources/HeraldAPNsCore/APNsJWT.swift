public import Crypto
public import Foundation
public import HeraldPushCore
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
        ES256JWT.sign(
            header: #"{"alg":"ES256","kid":"\#(keyID)"}"#, claims: #"{"iss":"\#(teamID)","iat":\#(Int(issuedAt.timeIntervalSince1970))}"#,
            with: privateKey)
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

/// APNs's use of the credential ledger: one provider token per key (`apns`, `<team>.<key>`),
/// so that N instances with the same key mint no more than one.
extension CredentialLedger {
    /// In one critical section across instances: the key's shared token while it is good —
    /// younger than `refreshAfter` and not `rejected`, or younger than `minimumAge` regardless —
    /// else a new one, `mint(iat)` with `iat` in whole seconds, stored and returned. `minted` says which.
    public func providerToken(
        teamID: String, keyID: String, now: Date, refreshAfter: Duration, minimumAge: Duration, rejected: String?,
        mint: @escaping @Sendable (Date) -> String
    ) async throws -> (jwt: String, issuedAt: Date, minted: Bool) {
        let (credential, made) = try await credential(
            service: "apns", key: teamID + "." + keyID,
            keep: { stored in
                let age = now.timeIntervalSince(stored.issuedAt)
                return age < minimumAge.seconds || (age < refreshAfter.seconds && stored.token != rejected)
            },
            make: {
                let iat = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
                return LedgerCredential(token: mint(iat), issuedAt: iat)
            })
        return (credential.token, credential.issuedAt, made)
    }
}

/// One provider token per key, shared by every connection of that key — and, with a ledger,
/// by every Herald instance using the key.
///
/// Refreshes at `refreshInterval` (50 minutes) and never mints more often than
/// `minimumInterval` (20 minutes), even when APNs refuses the token: Apple answers
/// `TooManyProviderTokenUpdates` to providers that mint more often.
public final class APNsProviderTokenSource: Sendable {
    public let key: APNsSigningKey
    public let refreshInterval: Duration
    public let minimumInterval: Duration
    public let ledger: (any CredentialLedger)?
    private let now: @Sendable () -> Date
    private let onLedgerError: @Sendable (any Error) -> Void

    private struct State {
        var current: APNsProviderToken?
        var refreshRequested = false
        var minted = 0
        /// The one ledger read in flight; every sender waits for it.
        var pending: Task<APNsProviderToken, Never>?
    }
    private let state = Mutex(State())

    /// - Parameters:
    ///   - ledger: where instances share the token (the store); `nil` mints locally.
    ///   - now: the clock; tests inject one.
    public init(
        key: APNsSigningKey,
        refreshInterval: Duration = .seconds(50 * 60),
        minimumInterval: Duration = .seconds(20 * 60),
        ledger: (any CredentialLedger)? = nil,
        now: @escaping @Sendable () -> Date = { Date() },
        onLedgerError: @escaping @Sendable (any Error) -> Void = { _ in }
    ) {
        self.key = key
        self.refreshInterval = refreshInterval
        self.minimumInterval = minimumInterval
        self.ledger = ledger
        self.now = now
        self.onLedgerError = onLedgerError
    }

    /// How many tokens this source has minted (not counting ones adopted from the ledger).
    public var mintedCount: Int { state.withLock { $0.minted } }

    /// The token to send now, minting one (or adopting the ledger's) when there is none, it is
    /// 50 minutes old, or a refresh was requested and the 20-minute floor allows it.
    public func currentToken() async -> APNsProviderToken {
        let now = self.now()
        enum Step { case use(APNsProviderToken), wait(Task<APNsProviderToken, Never>) }
        let step: Step = state.withLock { state in
            var rejected: String?
            if let current = state.current {
                let age = now.timeIntervalSince(current.issuedAt)
                let due = age >= refreshInterval.seconds || (state.refreshRequested && age >= minimumInterval.seconds)
                if !due { return .use(current) }
                if state.refreshRequested { rejected = current.jwt }
            }
            if let pending = state.pending { return .wait(pending) }
            guard let ledger else {
                let token = mintLocally(at: now, &state)
                return .use(token)
            }
            let fallback = state.current
            let task = Task { [self] in
                await self.adopt(from: ledger, now: now, rejected: rejected, fallback: fallback)
            }
            state.pending = task
            return .wait(task)
        }
        switch step {
        case .use(let token): return token
        case .wait(let task): return await task.value
        }
    }

    private func mintLocally(at now: Date, _ state: inout State) -> APNsProviderToken {
        let iat = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let token = APNsProviderToken(jwt: key.makeToken(issuedAt: iat), issuedAt: iat)
        state.current = token
        state.refreshRequested = false
        state.minted += 1
        return token
    }

    /// Reads (or mints into) the ledger. If the ledger is unreachable, keeps a token younger
    /// than an hour (Apple's limit), else mints locally: pushes go on while the database is down.
    private func adopt(from ledger: any CredentialLedger, now: Date, rejected: String?, fallback: APNsProviderToken?) async -> APNsProviderToken {
        let key = self.key
        do {
            let shared = try await ledger.providerToken(
                teamID: key.teamID, keyID: key.keyID, now: now, refreshAfter: refreshInterval, minimumAge: minimumInterval,
                rejected: rejected, mint: { key.makeToken(issuedAt: $0) })
            let token = APNsProviderToken(jwt: shared.jwt, issuedAt: shared.issuedAt)
            return state.withLock { state in
                state.current = token
                state.refreshRequested = false
                state.pending = nil
                if shared.minted { state.minted += 1 }
                return token
            }
        } catch {
            onLedgerError(error)
            return state.withLock { state in
                state.pending = nil
                if let fallback, now.timeIntervalSince(fallback.issuedAt) < 3_600, fallback.jwt != rejected { return fallback }
                return mintLocally(at: now, &state)
            }
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
