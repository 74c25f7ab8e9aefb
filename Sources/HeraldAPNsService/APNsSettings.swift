import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldPushCore

/// One app's APNs credentials and host, read from the `HERALD_APNS_*` variables or `HERALD_CONFIG`.
public struct APNsSettings: Sendable {
    var keyPath: String
    var keyID: String
    var teamID: String
    var topic: String
    var environment: APNsEnvironment
    /// `HERALD_APNS_URL`: another host (a simulator); nil means Apple's.
    var url: URL?
    /// `HERALD_APNS_SANDBOX_URL`: another host for sandbox pushes (a simulator's sandbox port);
    /// nil means `url` serves both, or Apple's sandbox host.
    var sandboxURL: URL?
    /// `HERALD_APNS_CA_FILE`: extra trust roots for that host.
    var caFile: String?

    /// The variable each `apns` key of `HERALD_CONFIG` stands for (their checks are shared).
    static let fileKeys = [
        "key_path": "HERALD_APNS_KEY_PATH", "key_id": "HERALD_APNS_KEY_ID", "team_id": "HERALD_APNS_TEAM_ID",
        "topic": "HERALD_APNS_TOPIC", "environment": "HERALD_APNS_ENVIRONMENT", "url": "HERALD_APNS_URL",
        "sandbox_url": "HERALD_APNS_SANDBOX_URL", "ca_file": "HERALD_APNS_CA_FILE",
    ]

    /// Reads the settings; nil when no credentials are configured at all.
    /// - Throws: `HeraldConfigurationError` naming the variable when they are incomplete or malformed.
    static func fromEnvironment(_ env: [String: String]) throws -> APNsSettings? {
        let names = ["HERALD_APNS_KEY_PATH", "HERALD_APNS_KEY_ID", "HERALD_APNS_TEAM_ID", "HERALD_APNS_TOPIC"]
        let values = names.map { env[$0].flatMap { $0.isEmpty ? nil : $0 } }
        if values.allSatisfy({ $0 == nil }) { return nil }
        for (name, value) in zip(names, values) where value == nil {
            throw HeraldConfigurationError(field: name, message: "is required with the other credentials (\(names.joined(separator: ", ")))")
        }
        let environment = try Self.environment(env)
        func parseURL(_ name: String) throws -> URL? {
            guard let raw = env[name], !raw.isEmpty else { return nil }
            guard let parsed = URL(string: raw), parsed.scheme == "https", parsed.host != nil else {
                throw HeraldConfigurationError(field: name, message: "is an https:// URL, not \(raw)")
            }
            return parsed
        }
        let url = try parseURL("HERALD_APNS_URL")
        let sandboxURL = try parseURL("HERALD_APNS_SANDBOX_URL")
        let caFile = env["HERALD_APNS_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw HeraldConfigurationError(field: "HERALD_APNS_CA_FILE", message: "\(caFile) is not readable")
        }
        return APNsSettings(
            keyPath: values[0]!, keyID: values[1]!, teamID: values[2]!, topic: values[3]!,
            environment: environment, url: url, sandboxURL: sandboxURL, caFile: caFile)
    }

    /// `HERALD_APNS_ENVIRONMENT`: the environment the app's builds use (default sandbox), for
    /// an app with credentials and one on the built-in simulator alike.
    static func environment(_ env: [String: String]) throws -> APNsEnvironment {
        guard let raw = env["HERALD_APNS_ENVIRONMENT"], !raw.isEmpty else { return .sandbox }
        guard let parsed = APNsEnvironment(rawValue: raw) else {
            throw HeraldConfigurationError(field: "HERALD_APNS_ENVIRONMENT", message: "is production or sandbox, not \(raw)")
        }
        return parsed
    }

    /// Loads the `.p8` key.
    func loadSigningKey() throws -> APNsSigningKey {
        _ = try KeyFile.text(at: keyPath, field: "HERALD_APNS_KEY_PATH")  // an unreadable file is named as that
        do {
            return try APNsSigningKey(contentsOfFile: keyPath, keyID: keyID, teamID: teamID)
        } catch {
            throw HeraldConfigurationError(field: "HERALD_APNS_KEY_PATH", message: "\(keyPath) is not a P-256 .p8 key")
        }
    }

    /// The client configuration for these settings (in `environment`, unless overridden).
    func clientConfiguration(environment override: APNsEnvironment? = nil) -> APNsClientConfiguration {
        let environment = override ?? environment
        return APNsClientConfiguration(environment: environment, url: environment == .sandbox ? sandboxURL ?? url : url, trustRootsPEMFile: caFile)
    }
}
