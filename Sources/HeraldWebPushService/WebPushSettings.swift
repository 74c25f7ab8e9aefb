import Foundation
import HeraldPushCore
import HeraldWebPushCore

/// One app's VAPID key and subject, from `HERALD_VAPID_PRIVATE_KEY_PATH` and `HERALD_VAPID_SUBJECT`
/// or an app's `vapid` block in `HERALD_CONFIG`.
public struct VAPIDSettings: Sendable {
    var key: VAPIDKey
    var subject: VAPIDSubject

    /// The variable each `vapid` key of `HERALD_CONFIG` stands for.
    static let fileKeys: [String: String] = ["private_key_path": "HERALD_VAPID_PRIVATE_KEY_PATH", "subject": "HERALD_VAPID_SUBJECT"]

    /// The subject of an app without a VAPID key of its own (an ephemeral key, for development).
    static let developmentSubject = "mailto:operator@herald.invalid"

    /// Reads the settings; nil when no key is named.
    /// - Throws: `HeraldConfigurationError` naming the variable at fault.
    static func fromEnvironment(_ env: [String: String]) throws -> VAPIDSettings? {
        func value(_ name: String) -> String? { env[name].flatMap { $0.isEmpty ? nil : $0 } }
        guard let path = value("HERALD_VAPID_PRIVATE_KEY_PATH") else {
            if value("HERALD_VAPID_SUBJECT") != nil {
                throw HeraldConfigurationError(field: "HERALD_VAPID_SUBJECT", message: "needs HERALD_VAPID_PRIVATE_KEY_PATH")
            }
            return nil
        }
        let key: VAPIDKey
        let pem = try KeyFile.text(at: path, field: "HERALD_VAPID_PRIVATE_KEY_PATH")
        do {
            key = try VAPIDKey(pem: pem)
        } catch {
            throw HeraldConfigurationError(
                field: "HERALD_VAPID_PRIVATE_KEY_PATH", message: "\(path) is not a P-256 private key in PEM (herald vapid-keys makes one)")
        }
        // Apple refuses a token without a subject it can read; so does Herald's simulator.
        guard let subjectText = value("HERALD_VAPID_SUBJECT") else {
            throw HeraldConfigurationError(field: "HERALD_VAPID_SUBJECT", message: "is required with a VAPID key: mailto:you@example.com or https://…")
        }
        do {
            return VAPIDSettings(key: key, subject: try VAPIDSubject(subjectText))
        } catch {
            throw HeraldConfigurationError(field: "HERALD_VAPID_SUBJECT", message: error.description)
        }
    }
}

/// The instance's Web Push transport settings.
public struct WebPushSettings: Sendable {
    /// `HERALD_WEBPUSH_ALLOW_HOSTS`: hosts (`host` or `host:port`) sent to even when they resolve
    /// inside (a simulator on 127.0.0.1); every other endpoint must resolve to public addresses.
    var allowHosts: Set<String> = []
    /// `HERALD_WEBPUSH_CA_FILE`: extra trust roots for those hosts.
    var caFile: String?
    /// `HERALD_WEBPUSH_TRUSTED_SERVICES`: the push services whose refusals of an app's VAPID key
    /// may pause the app's Web Push (the browsers' own by default).
    var trusted = TrustedPushServices.browsers

    /// No allowed hosts, no extra roots.
    init() {}

    init(environment env: [String: String]) throws {
        allowHosts = Set((env["HERALD_WEBPUSH_ALLOW_HOSTS"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty })
        for host in allowHosts where host.contains("/") || host.contains("@") || host.contains(" ") {
            throw HeraldConfigurationError(field: "HERALD_WEBPUSH_ALLOW_HOSTS", message: "is a comma-separated list of host or host:port, not \(host)")
        }
        if let text = env["HERALD_WEBPUSH_TRUSTED_SERVICES"], !text.isEmpty {
            let entries = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            for entry in entries where entry.contains("/") || entry.contains("@") || entry.contains(" ") || entry.dropFirst(2).contains("*") {
                throw HeraldConfigurationError(
                    field: "HERALD_WEBPUSH_TRUSTED_SERVICES", message: "is a comma-separated list of host, host:port or *.domain, not \(entry)")
            }
            trusted = TrustedPushServices(entries)
        }
        if let file = env["HERALD_WEBPUSH_CA_FILE"], !file.isEmpty {
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw HeraldConfigurationError(field: "HERALD_WEBPUSH_CA_FILE", message: "\(file) is not readable")
            }
            caFile = file
        }
    }
}
