import Foundation
import HeraldDelivery
import HeraldPushCore
import HeraldStore

/// One signing key per app for every instance and every start on a database: phones pin it, so
/// a second key would make them refuse half the pushes (two instances) or all of them (a restart
/// with another file). The store's credential ledger keeps each app's public key; a start with
/// another key, or with one made at start where devices already pinned one, is refused (exit 2).
/// A key is replaced on purpose by naming the one it replaces in `HERALD_SIGNING_KEY_REPLACES`.
enum SigningKeyRecord {
    /// The ledger's service name for signing keys (its key: the app id).
    static let service = "herald-signing-key"

    struct NothingRecorded: Error {}

    /// Records each app's public signing key on first use, or checks it against the recorded one.
    /// - Parameters:
    ///   - shared: the database can be shared by instances (PostgreSQL): a key made at start is refused.
    ///   - replacing: public keys a configured key may replace (`HERALD_SIGNING_KEY_REPLACES`).
    /// - Throws: `HeraldConfigurationError` naming `HERALD_SIGNING_KEY_PATH`.
    static func check(_ apps: [ConfigFile.App], store: any CredentialLedger, shared: Bool, replacing: Set<String>) async throws {
        for app in apps {
            guard let sealing = app.settings.sealing else { continue }
            let id = app.settings.id, ours = sealing.signingKey.publicKeyBase64URL
            if sealing.keyIsEphemeral {
                if shared {
                    throw HeraldConfigurationError(
                        field: "HERALD_SIGNING_KEY_PATH",
                        message: "app \(id) has no signing key file: on PostgreSQL every instance must sign with the same key; make one with herald signing-key and name it here (or signing_key_path in HERALD_CONFIG)")
                }
                // SQLite and no file: fine until a key was recorded, which its devices pinned.
                do {
                    let recorded = try await store.credential(service: service, key: id, keep: { _ in true }, make: { throw NothingRecorded() })
                    throw HeraldConfigurationError(
                        field: "HERALD_SIGNING_KEY_PATH",
                        message: "app \(id)'s devices pinned the key \(recorded.credential.token.prefix(12))… of this database; a key made at start would be refused by them: name its file here")
                } catch is NothingRecorded {
                    continue
                }
            }
            let recorded = try await store.credential(
                service: service, key: id, keep: { $0.token == ours || !replacing.contains($0.token) },
                make: { LedgerCredential(token: ours, issuedAt: Date()) })
            guard recorded.credential.token == ours else {
                throw HeraldConfigurationError(
                    field: "HERALD_SIGNING_KEY_PATH",
                    message: "app \(id)'s pushes are signed with \(recorded.credential.token.prefix(12))… on this database (another instance, or an earlier start), and this file's key is \(ours.prefix(12))…: give every instance the same key file; to replace the key on purpose, set HERALD_SIGNING_KEY_REPLACES to the old public key")
            }
        }
    }
}
