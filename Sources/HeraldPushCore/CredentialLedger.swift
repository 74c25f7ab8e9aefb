public import Foundation

/// A credential a push service is spoken to with, as the ledger keeps it: an APNs provider
/// token Herald minted, an FCM access token Google granted.
public struct LedgerCredential: Sendable, Hashable {
    public var token: String
    public var issuedAt: Date
    /// When the service stops taking it, where it says (FCM); nil when the rule is the issuer's age (APNs).
    public var expiresAt: Date?

    public init(token: String, issuedAt: Date, expiresAt: Date? = nil) {
        self.token = token
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }
}

/// Where every Herald instance on one database agrees on one credential per push service and
/// key, so that N instances mint or exchange no more than one: Apple answers
/// `TooManyProviderTokenUpdates` to providers that mint too often, and Google's grants are
/// rate-limited. Each service says when a stored credential is still good (`keep`) and how to
/// make a new one (`make`); the ledger (the store) keeps one row per (service, key).
public protocol CredentialLedger: Sendable {
    /// In one critical section across instances: the stored credential of `(service, key)` while
    /// `keep` accepts it, else `make()`'s, stored and returned. `made` says which.
    func credential(
        service: String, key: String, keep: @escaping @Sendable (LedgerCredential) -> Bool,
        make: @escaping @Sendable () async throws -> LedgerCredential
    ) async throws -> (credential: LedgerCredential, made: Bool)
}
