import Foundation
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `HERALD_CONFIG` file `herald serve` must refuse, and the field it must name.
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
    BadConfig(name: "matrix not a list", yaml: "apps: [{id: a}]\nmatrix: {im.x: apns}", field: "matrix"),
    BadConfig(name: "matrix app_id missing", yaml: "apps: [{id: a}]\nmatrix: [{app: a, type: apns}]", field: "matrix[0].app_id"),
    BadConfig(name: "matrix app not among apps", yaml: "apps: [{id: a}]\nmatrix: [{app_id: im.x, app: b, type: apns}]", field: "matrix[0].app"),
    BadConfig(name: "matrix type unknown", yaml: "apps: [{id: a}]\nmatrix: [{app_id: im.x, app: a, type: gcm}]", field: "matrix[0].type"),
    BadConfig(name: "matrix unknown key", yaml: "apps: [{id: a}]\nmatrix: [{app_id: im.x, app: a, type: apns, certfile: c.pem}]", field: "matrix[0].certfile"),
    BadConfig(name: "matrix allowed_endpoints on apns", yaml: "apps: [{id: a}]\nmatrix: [{app_id: im.x, app: a, type: apns, allowed_endpoints: [x]}]", field: "matrix[0].allowed_endpoints"),
    BadConfig(name: "matrix flag not a boolean", yaml: "apps: [{id: a}]\nmatrix: [{app_id: im.x, app: a, type: apns, encrypted_room_details: yes please}]", field: "matrix[0].encrypted_room_details"),
]

@Suite("HERALD_CONFIG: several apps per instance", .serialized)
struct ConfigFileTests {
    @Test("a bad file is refused at start, naming the file and the field", arguments: badConfigs)
    func refused(config: BadConfig) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("herald.yaml").path
        if let yaml = config.yaml { try Data(yaml.utf8).write(to: URL(fileURLWithPath: path)) }
        let (code, json) = try runHerald(["serve"], environment: [
            "HERALD_CONFIG": path, "HERALD_HTTP_PORT": "0",
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
        ])
        #expect(code == 2)
        #expect(json["status"] as? String == "invalid")
        #expect(json["field"] as? String == config.field, "\(json)")
        #expect((json["error"] as? String)?.contains(path) == true, "\(json)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("herald.sqlite").path))
    }

    @Test("keys under 16 characters (a JWT secret under 32) in the environment are refused at start, naming the variable",
          arguments: ["HERALD_PUBLISH_KEYS", "HERALD_REGISTRATION_KEYS", "HERALD_REGISTRATION_JWT_SECRET"])
    func shortKeys(variable: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (code, json) = try runHerald(["serve"], environment: [
            variable: "long-enough-key-0001,pk", "HERALD_HTTP_PORT": "0",
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == variable)
    }

    @Test("every variable's value is checked at start: a wrong one exits 2 naming it", arguments: [
        (["HERALD_LOG_LEVEL": "loud"], "HERALD_LOG_LEVEL"),
        (["HERALD_APNS_ENVIRONMENT": "prod"], "HERALD_APNS_ENVIRONMENT"),
        (["HERALD_TRUSTED_PROXY_HEADER": "via"], "HERALD_TRUSTED_PROXY_HEADER"),
        (["HERALD_MATRIX_ALLOWED_CLIENTS": "homeserver.example"], "HERALD_MATRIX_ALLOWED_CLIENTS"),
        (["HERALD_CORS_ORIGINS": "*"], "HERALD_CORS_ORIGINS"),
        (["HERALD_ADMIN_PORT": "65536"], "HERALD_ADMIN_PORT"),
        (["HERALD_MAX_CONNECTIONS": "0"], "HERALD_MAX_CONNECTIONS"),
        (["HERALD_MAX_CONNECTIONS": "99999999"], "HERALD_MAX_CONNECTIONS"),
        (["HERALD_HTTP_REQUEST_TIMEOUT_SECONDS": "0"], "HERALD_HTTP_REQUEST_TIMEOUT_SECONDS"),
        (["HERALD_APNS_SANDBOX_URL": "http://127.0.0.1:1", "HERALD_APNS_KEY_PATH": "/k.p8", "HERALD_APNS_KEY_ID": "K", "HERALD_APNS_TEAM_ID": "T", "HERALD_APNS_TOPIC": "t"], "HERALD_APNS_SANDBOX_URL"),
        (["HERALD_MATRIX_APPS": "im.example.ios=gcm"], "HERALD_MATRIX_APPS"),
        (["HERALD_MATRIX_APPS": "im.example.ios"], "HERALD_MATRIX_APPS"),
        (["HERALD_FCM_CREDENTIALS_FILE": "/nonexistent/service-account.json"], "HERALD_FCM_CREDENTIALS_FILE"),
        (["HERALD_FCM_URL": "https://127.0.0.1:1"], "HERALD_FCM_URL"),
        (["HERALD_FCM_PROJECT_ID": "my-project"], "HERALD_FCM_PROJECT_ID"),
    ])
    func badFCMVariables(environment: [String: String], variable: String) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (code, json) = try await runHeraldOffPool(["serve"], environment: environment.merging([
            "HERALD_HTTP_PORT": "0", "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
        ]) { _, new in new })
        #expect(code == 2)
        #expect(json["status"] as? String == "invalid")
        #expect(json["field"] as? String == variable, "\(json)")
    }

    @Test("a port another process holds (API or admin), and a SQLite file another herald serve holds: exit 2 naming the variable")
    func taken() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = "sqlite:" + directory.appendingPathComponent("herald.sqlite").path
        let first = try ServeProcess(environment: ["HERALD_DATABASE_URL": database, "HERALD_HTTP_PORT": "0"])
        defer { first.process.kill(SIGTERM) }
        let port = try #require(first.api.split(separator: ":").last.map(String.init))
        // Another file, the same port.
        var (code, json) = try await runHeraldOffPool(["serve"], environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("other.sqlite").path, "HERALD_HTTP_PORT": port,
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == "HERALD_HTTP_PORT", "\(json)")
        #expect((json["error"] as? String)?.contains(port) == true, "\(json)")
        // Another file, the first one's admin port; then the API's own port given to both listeners.
        let adminPort = try #require(first.admin.split(separator: ":").last.map(String.init))
        (code, json) = try await runHeraldOffPool(["serve"], environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("other.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_ADMIN_PORT": adminPort,
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == "HERALD_ADMIN_PORT", "\(json)")
        #expect((json["error"] as? String)?.contains(adminPort) == true, "\(json)")
        (code, json) = try await runHeraldOffPool(["serve"], environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("other.sqlite").path, "HERALD_HTTP_PORT": "18444",
            "HERALD_ADMIN_PORT": "18444",
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == "HERALD_ADMIN_PORT", "\(json)")
        // The same file, another port.
        (code, json) = try await runHeraldOffPool(["serve"], environment: ["HERALD_DATABASE_URL": database, "HERALD_HTTP_PORT": "0"])
        #expect(code == 2)
        #expect(json["field"] as? String == "HERALD_DATABASE_URL", "\(json)")
        // The first is unharmed.
        let (status, _) = try await http("GET", first.api + "/healthz")
        #expect(status == 200)
    }

    @Test("a PostgreSQL that does not answer stops the start (exit 2), naming its host, port and cause")
    func unreachableDatabase() async throws {
        // Nothing listens on port 1.
        let (code, json) = try await runHeraldOffPool(["serve"], environment: [
            "HERALD_DATABASE_URL": "postgres://herald:secret-password@127.0.0.1:1/herald?sslmode=disable", "HERALD_HTTP_PORT": "0",
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == "HERALD_DATABASE_URL", "\(json)")
        let message = json["error"] as? String ?? ""
        #expect(message.contains("127.0.0.1:1"), "\(message)")
        #expect(!message.contains("secret-password"))
    }

    @Test("publishing off is said at start, and the 401 tells no key from an unknown one")
    func publishingOff() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // A misspelled variable: no publisher key at all.
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEY": "publisher-key-0123456789",
        ])
        let body = #"{"template":"custom","targets":{"keys":["session:s"]},"fields":{"aps":{"alert":"x"}}}"#
        let (status, answer) = try await http("POST", serve.api + "/v1/events", body, bearer: "publisher-key-0123456789")
        #expect(status == 401)
        #expect(String(decoding: answer, as: UTF8.self).contains("publishing is off"))
        let (bare, _) = try await http("POST", serve.api + "/v1/events", body)
        #expect(bare == 401)
        serve.process.kill(SIGTERM)
        #expect(serve.process.fullLog().contains("publishing is off for this app"))
    }

    @Test("two apps from the file, each with its own publisher key, registration policy and topic")
    func twoAppsFromFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("herald.yaml").path
        try Data("""
            # Two apps, both on the built-in simulator (no apns block).
            http_port: 0
            database_url: sqlite:\(directory.appendingPathComponent("herald.sqlite").path)
            apps:
              - id: ghosttalk
                publish_keys: [ghost-key-000000001]
              - id: claudiator
                publish_keys: [claude-key-00000001]
                registration: {policy: bearer, keys: [claude-registrar]}
                agent_event:
                  stop: {title: Fertig, body: "{device_name} wartet"}
            """.utf8).write(to: URL(fileURLWithPath: path))
        let serve = try HeraldProcess(["serve"], environment: ["HERALD_CONFIG": path])
        defer { if serve.process.isRunning { serve.kill(SIGKILL) } }
        let ready = try serve.ready()
        let api = ready.api
        let control = try #require(ready.simulatorControl)

        let (ghost, claude) = (String(repeating: "6a", count: 32), String(repeating: "7b", count: 32))
        var (status, _) = try await http("POST", api + "/v1/push/register",
            #"{"device_token":"\#(ghost)","platform":"ios","watched_addresses":["session:g"],"app":"ghosttalk"}"#)
        #expect(status == 200)
        (status, _) = try await http("POST", api + "/v1/push/register",
            #"{"device_token":"\#(claude)","platform":"ios","watched_addresses":["session:c"],"app":"claudiator"}"#)
        #expect(status == 401)
        (status, _) = try await http("POST", api + "/v1/push/register",
            #"{"device_token":"\#(claude)","platform":"ios","watched_addresses":["session:c"],"app":"claudiator"}"#,
            bearer: "claude-registrar")
        #expect(status == 200)
        // A compatibility route names its app by header or by path prefix; with two apps it must.
        let ghostSession = #"{"session_id":"g2","device_token":"\#(ghost)"}"#
        var body: [String: Any]
        (status, body) = try await post(api + "/apns/register", ghostSession, headers: [:])
        #expect(status == 400 && (body["error"] as? [String: Any])?["field"] as? String == "X-Herald-App")
        (status, _) = try await post(api + "/apns/register", ghostSession, headers: ["X-Herald-App": "ghosttalk"])
        #expect(status == 200)
        (status, body) = try await post(api + "/apps/ghosttalk/apns/stats", nil, headers: [:], method: "GET")
        #expect(body["total_registrations"] as? Int == 1 && body["topic"] as? String == "com.example.ghosttalk")
        (status, _) = try await post(api + "/apps/claudiator/api/v1/push/register", #"{"platform":"ios","token":"\#(claude)"}"#,
                                     headers: ["Authorization": "Bearer claude-registrar"])
        #expect(status == 200)

        (status, _) = try await http("POST", api + "/v1/events",
            #"{"template":"session.message","fields":{"session_id":"g2","message_id":"m","timestamp":1,"encrypted":true,"has_attachment":false}}"#,
            bearer: "ghost-key-000000001")
        #expect(status == 202)
        (status, _) = try await http("POST", api + "/v1/events",
            #"{"template":"agent.event","fields":{"hook_event_name":"Stop","device_name":"mac","session_id":"s1"}}"#, bearer: "claude-key-00000001")
        #expect(status == 202)
        var pushes: [String: (topic: String, payload: String)] = [:]
        for _ in 0..<100 where pushes.count < 2 {
            let (_, data) = try await http("GET", control + "/notifications")
            let list = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
            for n in list { pushes[n["token"] as? String ?? ""] = (n["topic"] as? String ?? "", n["payload"] as? String ?? "") }
            if pushes.count < 2 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(pushes[ghost]?.topic == "com.example.ghosttalk")
        #expect(pushes[claude]?.topic == "com.example.claudiator")
        // The app's own agent.event texts.
        #expect(pushes[claude]?.payload.hasPrefix(#"{"aps":{"alert":{"title":"Fertig","body":"mac wartet"}"#) == true)
        serve.kill(SIGTERM)
        #expect(serve.process.terminationStatus == 0)
    }
}
