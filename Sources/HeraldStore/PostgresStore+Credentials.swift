import Foundation
public import HeraldPushCore
import PostgresNIO

/// PostgresStore: credentials.
extension PostgresStore {
    public func credential(
        service: String, key: String, keep: @escaping @Sendable (LedgerCredential) -> Bool,
        make: @escaping @Sendable () async throws -> LedgerCredential
    ) async throws -> (credential: LedgerCredential, made: Bool) {
        try await client.withTransaction(logger: logger) { db in
            // The row may not exist yet: lock the key itself, held across `make`, so instances
            // decide one at a time and the others adopt what the first made.
            try await db.query("SELECT pg_advisory_xact_lock(\(Self.credentialLock), hashtext(\(service + ":" + key)))", logger: logger)
            let rows = try await db.query(
                "SELECT token, issued_at, expires_at FROM credentials WHERE service = \(service) AND key = \(key)", logger: logger)
            for try await (token, issuedAt, expiresAt) in rows.decode((String, Int64, Int64?).self) {
                let stored = LedgerCredential(token: token, issuedAt: Date(milliseconds: issuedAt), expiresAt: expiresAt.map(Date.init(milliseconds:)))
                if keep(stored) { return (stored, false) }
            }
            let made = try await make()
            try await db.query(
                """
                INSERT INTO credentials (service, key, token, issued_at, expires_at)
                VALUES (\(service), \(key), \(made.token), \(made.issuedAt.milliseconds), \(made.expiresAt?.milliseconds))
                ON CONFLICT (service, key) DO UPDATE SET token = excluded.token, issued_at = excluded.issued_at, expires_at = excluded.expires_at
                """, logger: logger)
            return (made, true)
        }
    }

    /// The first half of the advisory lock key for credentials ("CRED").
    static let credentialLock: Int32 = 0x4352_4544
}
