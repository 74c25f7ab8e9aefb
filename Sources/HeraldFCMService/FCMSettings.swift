import Foundation
import HeraldFCM
import HeraldFCMCore
import HeraldPushCore

/// One app's FCM service account and hosts, from the `HERALD_FCM_*` variables or an app's `fcm`
/// block in `HERALD_CONFIG`.
public struct FCMSettings: Sendable {
    var account: FCMServiceAccount
    /// `HERALD_FCM_PROJECT_ID`; the file's `project_id` when nil.
    var projectID: String?
    /// `HERALD_FCM_URL`, `HERALD_FCM_TOKEN_URL`: other hosts (a simulator).
    var url: URL?
    var tokenURL: URL?
    /// `HERALD_FCM_CA_FILE`: extra trust roots for those hosts.
    var caFile: String?

    /// The variable each `fcm` key of `HERALD_CONFIG` stands for.
    static let fileKeys: [String: String] = [
        "credentials_file": "HERALD_FCM_CREDENTIALS_FILE", "project_id": "HERALD_FCM_PROJECT_ID", "url": "HERALD_FCM_URL",
        "token_url": "HERALD_FCM_TOKEN_URL", "ca_file": "HERALD_FCM_CA_FILE",
    ]

    /// Reads the settings; nil when no credentials file is named.
    /// - Throws: `HeraldConfigurationError` naming the variable at fault.
    static func fromEnvironment(_ env: [String: String]) throws -> FCMSettings? {
        func value(_ name: String) -> String? { env[name].flatMap { $0.isEmpty ? nil : $0 } }
        guard let path = value("HERALD_FCM_CREDENTIALS_FILE") else {
            for name in ["HERALD_FCM_PROJECT_ID", "HERALD_FCM_URL", "HERALD_FCM_TOKEN_URL"] where value(name) != nil {
                throw HeraldConfigurationError(field: name, message: "needs HERALD_FCM_CREDENTIALS_FILE")
            }
            return nil
        }
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount(contentsOfFile: path)
        } catch {
            throw HeraldConfigurationError(field: "HERALD_FCM_CREDENTIALS_FILE", message: "\(path): \(error)")
        }
        func url(_ name: String) throws -> URL? {
            guard let raw = value(name) else { return nil }
            guard let parsed = URL(string: raw), parsed.scheme == "https", parsed.host != nil else {
                throw HeraldConfigurationError(field: name, message: "is an https:// URL, not \(raw)")
            }
            return parsed
        }
        let projectID = value("HERALD_FCM_PROJECT_ID")
        if let projectID, !FCMServiceAccount.isProjectID(projectID) {
            throw HeraldConfigurationError(field: "HERALD_FCM_PROJECT_ID", message: "is a Firebase project id (letters, digits, -)")
        }
        let caFile = value("HERALD_FCM_CA_FILE")
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw HeraldConfigurationError(field: "HERALD_FCM_CA_FILE", message: "\(caFile) is not readable")
        }
        return FCMSettings(account: account, projectID: projectID, url: try url("HERALD_FCM_URL"), tokenURL: try url("HERALD_FCM_TOKEN_URL"), caFile: caFile)
    }

    var clientConfiguration: FCMClientConfiguration {
        FCMClientConfiguration(url: url, tokenURL: tokenURL, trustRootsPEMFile: caFile)
    }
}
