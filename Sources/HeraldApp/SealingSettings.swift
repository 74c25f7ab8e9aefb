import Foundation
import HeraldDelivery
import HeraldPushCore

/// An app's signing key and sealing (docs/signed-pushes.md), from `HERALD_SIGNING_KEY_PATH`, `HERALD_SEALED`,
/// `HERALD_SEALED_ALERT`, `HERALD_SEALED_ALERT_KEY`, `HERALD_SEALING_KEY_LIFETIME_SECONDS` and `HERALD_SEALING_CACHE_MIB`, or the app's
/// `signing_key_path`, `sealed`, `sealed_alert`, `sealing_key_lifetime_seconds` and `sealing_cache_mib` in
/// `HERALD_CONFIG` (where `sealed_alerts` also gives a template its own alert). Without a key file the app signs with a key made at start (development: a
/// phone that pinned it refuses pushes after a restart), and the start says so.
enum SealingSettings {
    /// The variable each app key of `HERALD_CONFIG` stands for.
    static let fileKeys = [
        "signing_key_path": "HERALD_SIGNING_KEY_PATH", "sealed": "HERALD_SEALED", "sealed_alert": "HERALD_SEALED_ALERT", "sealed_alert_key": "HERALD_SEALED_ALERT_KEY",
        "sealing_key_lifetime_seconds": "HERALD_SEALING_KEY_LIFETIME_SECONDS", "sealing_cache_mib": "HERALD_SEALING_CACHE_MIB",
    ]

    /// - Parameter field: the name a refusal gives each setting (the variable, or the file's key path).
    static func read(_ value: (String) -> String?, field: (String) -> String) throws -> PushSealing {
        var sealing: PushSealing
        if let path = value("HERALD_SIGNING_KEY_PATH") {
            guard let key = PushSigningKey(pem: try KeyFile.text(at: path, field: field("HERALD_SIGNING_KEY_PATH"))) else {
                throw HeraldConfigurationError(
                    field: field("HERALD_SIGNING_KEY_PATH"), message: "\(path) is not an Ed25519 private key in PEM (herald signing-key makes one)")
            }
            sealing = PushSealing(signingKey: key)
        } else {
            sealing = PushSealing(signingKey: PushSigningKey())
            sealing.keyIsEphemeral = true
        }
        if let text = value("HERALD_SEALED") {
            guard let mode = SealingMode(rawValue: text) else {
                throw HeraldConfigurationError(field: field("HERALD_SEALED"), message: "is required, when-registered or off")
            }
            sealing.mode = mode
        }
        let text = value("HERALD_SEALED_ALERT"), key = value("HERALD_SEALED_ALERT_KEY")
        for (variable, given) in [("HERALD_SEALED_ALERT", text), ("HERALD_SEALED_ALERT_KEY", key)] where given.map(isAlertText) == false {
            throw HeraldConfigurationError(field: field(variable), message: "is 1 to 200 characters, no control characters")
        }
        if text != nil || key != nil { sealing.genericAlert = SealedAlert(text: text ?? sealing.genericAlert.text, key: key) }
        var lifetime = SealingSessions.defaultLifetime, budget = SealingSessions.defaultBudgetMiB
        if let text = value("HERALD_SEALING_KEY_LIFETIME_SECONDS") {
            let maximum = Int(SealingSessions.maximumLifetime)
            guard let seconds = Int(text), (0...maximum).contains(seconds) else {
                throw HeraldConfigurationError(
                    field: field("HERALD_SEALING_KEY_LIFETIME_SECONDS"), message: "is a whole number of seconds from 0 (a key per push) to \(maximum)")
            }
            lifetime = TimeInterval(seconds)
        }
        if let text = value("HERALD_SEALING_CACHE_MIB") {
            guard let mib = Int(text), (1...65_536).contains(mib) else {
                throw HeraldConfigurationError(field: field("HERALD_SEALING_CACHE_MIB"), message: "is a whole number of MiB from 1 to 65536")
            }
            budget = mib
        }
        sealing.sessions = SealingSessions(lifetime: lifetime, capacity: SealingSessions.capacity(budgetMiB: budget))
        return sealing
    }

    /// The templates whose sealed pushes show an alert, so may have their own (`sealed_alerts`).
    static let alertTemplates: Set<String> = [
        "kasia.handshake", "kasia.contextual_message", "kasia.payment", "session.message", "agent.event", "custom",
    ]

    /// An alert text as `HERALD_SEALED_ALERT` takes it, or nil.
    static func isAlertText(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 200 && !text.unicodeScalars.contains(where: { $0.value < 0x20 })
    }
}
