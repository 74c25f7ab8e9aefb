import Crypto
import Foundation
import HeraldPushCore
import HeraldDelivery

/// Reads the keys of the `signed` registration policy, from `HERALD_CONFIG` or the environment.
enum RegistrationSigning {
    /// - Parameters:
    ///   - secret: the HS256 secret, at least 32 bytes.
    ///   - publicKeyPath: a PEM file with the backend's P-256 public key (ES256).
    ///   - error: builds the refusal naming a field, in the caller's terms.
    static func keys(
        secret: String?, publicKeyPath: String?, secretField: String, publicKeyField: String, policyField: String,
        error: (String, String) -> HeraldConfigurationError
    ) throws -> RegistrationSigningKeys {
        guard secret != nil || publicKeyPath != nil else {
            throw error(policyField, "signed needs an HS256 secret or an ES256 public key")
        }
        var keys = RegistrationSigningKeys()
        if let secret {
            guard secret.utf8.count >= RegistrationSigningKeys.minimumSecretLength else {
                throw error(secretField, "is at least \(RegistrationSigningKeys.minimumSecretLength) bytes")
            }
            keys.hs256Secret = Array(secret.utf8)
        }
        if let publicKeyPath {
            let pem: String
            do { pem = try KeyFile.text(at: publicKeyPath, field: publicKeyField) } catch let unreadable { throw error(publicKeyField, unreadable.message) }
            guard let key = try? P256.Signing.PublicKey(pemRepresentation: pem)
            else { throw error(publicKeyField, "\(publicKeyPath) is not a P-256 public key (PEM)") }
            keys.es256PublicKey = key
        }
        return keys
    }
}
