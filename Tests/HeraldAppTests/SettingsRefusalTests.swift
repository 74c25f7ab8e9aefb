import Foundation
import HeraldApp
import HeraldPushCore
import Testing

/// A `HERALD_CONFIG` file the settings must refuse, and the field they must name.
struct BadConfig: CustomTestStringConvertible, Sendable {
    var name: String
    var yaml: String?
    var field: String
    var testDescription: String { name }
}

let badConfigs: [BadConfig] = [
    BadConfig(name: "no such file", yaml: nil, field: "HERALD_CONFIG"),
    BadConfig(name: "not YAML", yaml: "apps: [", field: "HERALD_CONFIG"),
    BadConfig(name: "not a mapping", yaml: "- just\n- a list", field: "(top level)"),
    BadConfig(name: "unknown top-level key", yaml: "apps: [{id: a}]\nlisten: 80", field: "listen"),
    BadConfig(name: "no apps", yaml: "apps: []", field: "apps"),
    BadConfig(name: "unknown app key", yaml: "apps:\n  - id: a\n    topic: com.example.a", field: "apps[0].topic"),
    BadConfig(name: "app without id", yaml: "apps:\n  - publish_keys: [k]", field: "apps[0].id"),
    BadConfig(name: "two apps with one id", yaml: "apps:\n  - id: a\n  - id: a", field: "apps[1].id"),
    BadConfig(name: "publish key not a string", yaml: "apps:\n  - id: a\n    publish_keys: [[k]]", field: "apps[0].publish_keys[0]"),
    BadConfig(name: "unknown registration policy", yaml: "apps:\n  - id: a\n    registration: {policy: maybe}", field: "apps[0].registration.policy"),
    BadConfig(name: "bearer without keys", yaml: "apps:\n  - id: a\n    registration: {policy: bearer}", field: "apps[0].registration.keys"),
    BadConfig(name: "a publish key under 16 characters", yaml: "apps:\n  - id: a\n    publish_keys: [long-enough-key-0001, short]", field: "apps[0].publish_keys[1]"),
    BadConfig(name: "signed without a key", yaml: "apps:\n  - id: a\n    registration: {policy: signed}", field: "apps[0].registration.policy"),
    BadConfig(name: "signed with a short secret", yaml: "apps:\n  - id: a\n    registration: {policy: signed, hs256_secret: short}", field: "apps[0].registration.hs256_secret"),
    BadConfig(name: "signed with no such public key", yaml: "apps:\n  - id: a\n    registration: {policy: signed, es256_public_key_path: /nonexistent.pem}", field: "apps[0].registration.es256_public_key_path"),
    BadConfig(name: "a secret without policy signed", yaml: "apps:\n  - id: a\n    registration: {policy: open, hs256_secret: 0123456789abcdef0123456789abcdef}", field: "apps[0].registration.policy"),
    BadConfig(name: "a registration key under 16 characters", yaml: "apps:\n  - id: a\n    registration: {policy: bearer, keys: [key]}", field: "apps[0].registration.keys[0]"),
    BadConfig(name: "unknown apns key", yaml: "apps:\n  - id: a\n    apns: {key_file: k.p8}", field: "apps[0].apns.key_file"),
    BadConfig(name: "apns without key_id", yaml: "apps:\n  - id: a\n    apns: {key_path: k.p8, team_id: T, topic: t}", field: "apps[0].apns.key_id"),
    BadConfig(name: "unreadable .p8", yaml: "apps:\n  - id: a\n    apns: {key_path: /nonexistent/AuthKey.p8, key_id: K, team_id: T, topic: t}", field: "apps[0].apns.key_path"),
    BadConfig(name: "bad apns environment", yaml: "apps:\n  - id: a\n    apns: {key_path: k.p8, key_id: K, team_id: T, topic: t, environment: staging}", field: "apps[0].apns.environment"),
    BadConfig(name: "unknown fcm key", yaml: "apps:\n  - id: a\n    fcm: {credentials: x.json}", field: "apps[0].fcm.credentials"),
    BadConfig(name: "fcm without credentials_file", yaml: "apps:\n  - id: a\n    fcm: {project_id: p}", field: "apps[0].fcm.project_id"),
    BadConfig(name: "unreadable service account", yaml: "apps:\n  - id: a\n    fcm: {credentials_file: /nonexistent/sa.json}", field: "apps[0].fcm.credentials_file"),
    BadConfig(name: "port out of range", yaml: "http_port: 70000\napps: [{id: a}]", field: "http_port"),
    BadConfig(name: "a limit of 0 watch keys", yaml: "limits: {watch_keys: 0}\napps: [{id: a}]", field: "limits.watch_keys"),
    BadConfig(name: "a batch body over 64 MiB", yaml: "limits: {batch_body_bytes: 100000000}\napps: [{id: a}]", field: "limits.batch_body_bytes"),
    BadConfig(name: "an unknown limit", yaml: "limits: {devices: 5}\napps: [{id: a}]", field: "limits.devices"),
    BadConfig(name: "an unknown privacy", yaml: "apps: [{id: a, privacy: secret}]", field: "apps[0].privacy"),
    BadConfig(name: "an unknown sealing", yaml: "apps: [{id: a, sealed: always}]", field: "apps[0].sealed"),
    BadConfig(name: "sealing not a word", yaml: "apps: [{id: a, sealed: [required]}]", field: "apps[0].sealed"),
    BadConfig(name: "a signing key that is not one", yaml: "apps: [{id: a, signing_key_path: /nonexistent/signing-key.pem}]", field: "apps[0].signing_key_path"),
    BadConfig(name: "a sealed alert with a line break", yaml: "apps: [{id: a, sealed_alert: \"two\\nlines\"}]", field: "apps[0].sealed_alert"),
    BadConfig(name: "a sealed alert for a template without alerts", yaml: "apps: [{id: a, sealed_alerts: {conversation.silent: Hi}}]", field: "apps[0].sealed_alerts.conversation.silent"),
    BadConfig(name: "an empty sealed alert for a template", yaml: "apps: [{id: a, sealed_alerts: {kasia.payment: \"\"}}]", field: "apps[0].sealed_alerts.kasia.payment"),
    BadConfig(name: "a sealed alert's key with a line break", yaml: "apps: [{id: a, sealed_alerts: {kasia.payment: {text: Paid, key: \"A\\nB\"}}}]", field: "apps[0].sealed_alerts.kasia.payment.key"),
    BadConfig(name: "a sealed alert's block without its text", yaml: "apps: [{id: a, sealed_alerts: {kasia.payment: {key: PAID}}}]", field: "apps[0].sealed_alerts.kasia.payment.text"),
    BadConfig(name: "a presentation key that is not one", yaml: "apps: [{id: a, presentation: {volume: 11}}]", field: "apps[0].presentation.volume"),
    BadConfig(name: "a presentation category with a space", yaml: "apps: [{id: a, presentation: {category: \"has space\"}}]", field: "apps[0].presentation.category"),
    BadConfig(name: "a presentation relevance past 1", yaml: "apps: [{id: a, presentation: {relevance_score: 1.5}}]", field: "apps[0].presentation.relevance_score"),
    BadConfig(name: "a presentation badge that is text", yaml: "apps: [{id: a, presentation: {badge: many}}]", field: "apps[0].presentation.badge"),
    BadConfig(name: "critical presentation without critical_alerts", yaml: "apps: [{id: a, presentation: {interruption_level: critical}}]", field: "apps[0].presentation.interruption_level"),
    BadConfig(name: "a template's presentation for a silent template", yaml: "apps: [{id: a, presentation: {templates: {conversation.silent: {sound: x}}}}]", field: "apps[0].presentation.templates.conversation.silent"),
    BadConfig(name: "a template's presentation out of range", yaml: "apps: [{id: a, presentation: {templates: {kasia.payment: {badge: 100000}}}}]", field: "apps[0].presentation.templates.kasia.payment.badge"),
    BadConfig(name: "a sealing key lifetime over a week", yaml: "apps: [{id: a, sealing_key_lifetime_seconds: 700000}]", field: "apps[0].sealing_key_lifetime_seconds"),
    BadConfig(name: "matrix not a list", yaml: "apps: [{id: a}]\nmatrix: {im.x: apns}", field: "matrix"),
    BadConfig(name: "matrix app_id missing", yaml: "apps: [{id: a}]\nmatrix: [{app: a, type: apns}]", field: "matrix[0].app_id"),
    BadConfig(name: "matrix app not among apps", yaml: "apps: [{id: a}]\nmatrix: [{app_id: im.x, app: b, type: apns}]", field: "matrix[0].app"),
    BadConfig(name: "matrix type unknown", yaml: "apps: [{id: a}]\nmatrix: [{app_id: im.x, app: a, type: gcm}]", field: "matrix[0].type"),
    BadConfig(name: "matrix unknown key", yaml: "apps: [{id: a}]\nmatrix: [{app_id: im.x, app: a, type: apns, certfile: c.pem}]", field: "matrix[0].certfile"),
    BadConfig(name: "matrix allowed_endpoints on apns", yaml: "apps: [{id: a}]\nmatrix: [{app_id: im.x, app: a, type: apns, allowed_endpoints: [x]}]", field: "matrix[0].allowed_endpoints"),
    BadConfig(name: "matrix flag not a boolean", yaml: "apps: [{id: a}]\nmatrix: [{app_id: im.x, app: a, type: apns, encrypted_room_details: yes please}]", field: "matrix[0].encrypted_room_details"),
]

/// Variables the settings must refuse, and the variable each refusal must name.
let badVariables: [([String: String], String)] = [
        (["HERALD_APNS_ENVIRONMENT": "prod"], "HERALD_APNS_ENVIRONMENT"),
        (["HERALD_SEALED_ALERT_KEY": "two\nlines"], "HERALD_SEALED_ALERT_KEY"),
        (["HERALD_TRUSTED_PROXY_HEADER": "via"], "HERALD_TRUSTED_PROXY_HEADER"),
        (["HERALD_MATRIX_ALLOWED_CLIENTS": "homeserver.example"], "HERALD_MATRIX_ALLOWED_CLIENTS"),
        (["HERALD_CORS_ORIGINS": "*"], "HERALD_CORS_ORIGINS"),
        (["HERALD_ADMIN_PORT": "65536"], "HERALD_ADMIN_PORT"),
        (["HERALD_MAX_CONNECTIONS": "0"], "HERALD_MAX_CONNECTIONS"),
        (["HERALD_MAX_CONNECTIONS": "99999999"], "HERALD_MAX_CONNECTIONS"),
        (["HERALD_HTTP_REQUEST_TIMEOUT_SECONDS": "0"], "HERALD_HTTP_REQUEST_TIMEOUT_SECONDS"),
        (["HERALD_EVENT_LOOPS": "0"], "HERALD_EVENT_LOOPS"),
        (["HERALD_EVENT_LOOPS": "99999999999999999999"], "HERALD_EVENT_LOOPS"),
        // Numbers past what their conversion to seconds and dates can hold: refused, never a crash.
        (["HERALD_STALE_AFTER_DAYS": "999999999999"], "HERALD_STALE_AFTER_DAYS"),
        (["HERALD_KASPA_MAX_AGE": "99999999999999999d"], "HERALD_KASPA_MAX_AGE"),
        (["HERALD_KASPA_MAX_AGE": "400d"], "HERALD_KASPA_MAX_AGE"),
        (["HERALD_OUTBOX_LEASE_SECONDS": "99999999999999999"], "HERALD_OUTBOX_LEASE_SECONDS"),
        (["HERALD_APNS_SANDBOX_URL": "http://127.0.0.1:1", "HERALD_APNS_KEY_PATH": "/k.p8", "HERALD_APNS_KEY_ID": "K", "HERALD_APNS_TEAM_ID": "T", "HERALD_APNS_TOPIC": "t"], "HERALD_APNS_SANDBOX_URL"),
        (["HERALD_MATRIX_APPS": "im.example.ios=gcm"], "HERALD_MATRIX_APPS"),
        (["HERALD_MATRIX_APPS": "im.example.ios"], "HERALD_MATRIX_APPS"),
        (["HERALD_FCM_CREDENTIALS_FILE": "/nonexistent/service-account.json"], "HERALD_FCM_CREDENTIALS_FILE"),
        (["HERALD_FCM_URL": "https://127.0.0.1:1"], "HERALD_FCM_URL"),
        (["HERALD_FCM_PROJECT_ID": "my-project"], "HERALD_FCM_PROJECT_ID"),
        (["HERALD_SEALED": "yes"], "HERALD_SEALED"),
        (["HERALD_SEALING_KEY_LIFETIME_SECONDS": "604801"], "HERALD_SEALING_KEY_LIFETIME_SECONDS"),
        (["HERALD_SEALING_KEY_LIFETIME_SECONDS": "-1"], "HERALD_SEALING_KEY_LIFETIME_SECONDS"),
        (["HERALD_SIGNING_KEY_PATH": "/nonexistent/signing-key.pem"], "HERALD_SIGNING_KEY_PATH"),
    ]

/// What `herald serve` refuses at start, refused by the settings in this process: each refusal
/// names the field or variable at fault, and nothing is written. (The child-process suite keeps
/// one of each for the exit code and the JSON line.)
@Suite("HeraldApp: settings refused, in-process")
struct SettingsRefusalTests {
    @Test("a bad file is refused, naming the file and the field", arguments: badConfigs)
    func refused(config: BadConfig) throws {
        try withScratch { directory in
            let path = directory.appendingPathComponent("herald.yaml").path
            if let yaml = config.yaml { try Data(yaml.utf8).write(to: URL(fileURLWithPath: path)) }
            let error = try #require(HeraldAppTests.refusal([
                "HERALD_CONFIG": path, "HERALD_HTTP_PORT": "0",
                "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
            ]))
            #expect(error.field == config.field, "\(error)")
            #expect(error.message.contains(path), "\(error)")
            #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("herald.sqlite").path))
        }
    }

    @Test("keys under 16 characters (a JWT secret under 32) in the environment are refused, naming the variable",
          arguments: ["HERALD_PUBLISH_KEYS", "HERALD_REGISTRATION_KEYS", "HERALD_REGISTRATION_JWT_SECRET"])
    func shortKeys(variable: String) throws {
        try withScratch { directory in
            let error = HeraldAppTests.refusal([
                variable: "long-enough-key-0001,pk", "HERALD_HTTP_PORT": "0",
                "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
            ])
            #expect(error?.field == variable)
        }
    }

    @Test("every variable's value is checked: a wrong one is refused naming it", arguments: badVariables)
    func badVariable(environment: [String: String], variable: String) throws {
        try withScratch { directory in
            let error = HeraldAppTests.refusal(environment.merging([
                "HERALD_HTTP_PORT": "0", "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
            ]) { _, new in new })
            #expect(error?.field == variable, "\(String(describing: error))")
        }
    }

    /// Runs `body` in a scratch directory removed after it.
    private func withScratch(_ body: (URL) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-settings-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try body(directory)
    }
}
