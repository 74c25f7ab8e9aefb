import Foundation
import GRDB
public import HeraldPushCore

/// SQLiteStore: credentials.
extension SQLiteStore {
    public func credential(
        service: String, key: String, keep: @escaping @Sendable (LedgerCredential) -> Bool,
        make: @escaping @Sendable () async throws -> LedgerCredential
    ) async throws -> (credential: LedgerCredential, made: Bool) {
        @Sendable func stored(_ db: Database) throws -> LedgerCredential? {
            try Row.fetchOne(db, sql: "SELECT token, issued_at, expires_at FROM credentials WHERE service = ? AND key = ?", arguments: [service, key])
                .map { LedgerCredential(token: $0["token"], issuedAt: Date(milliseconds: $0["issued_at"]), expiresAt: ($0["expires_at"] as Int64?).map(Date.init(milliseconds:))) }
        }
        let read = try await pool.read(stored)
        if let read, keep(read) { return (read, false) }
        // `make` may be a network exchange: it runs outside the write lock. Whoever writes first
        // wins; a store that made one meanwhile adopts the winner's, so the instances on a file
        // still send one credential.
        let made = try await make()
        return try await pool.write { db in
            let current = try stored(db)
            if let current, current != read, keep(current) { return (current, false) }
            try db.execute(
                sql: """
                    INSERT INTO credentials (service, key, token, issued_at, expires_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (service, key) DO UPDATE SET token = excluded.token, issued_at = excluded.issued_at, expires_at = excluded.expires_at
                    """, arguments: [service, key, made.token, made.issuedAt.milliseconds, made.expiresAt?.milliseconds])
            return (made, true)
        }
    }
}
