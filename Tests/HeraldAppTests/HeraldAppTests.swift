import Foundation
import HeraldAPNsCore
@testable import HeraldApp
import HeraldCore
import HeraldDelivery
import HeraldPushService
import HeraldPushCore
import HeraldStore
import HeraldTestSupport
import Logging
import ServiceLifecycle
import Testing

/// `herald serve`'s settings and composition, in this process: no child process, no port to
/// guess. The child-process suites keep what needs a process: exit codes (a port in use among
/// them), signals, several instances.
@Suite("HeraldApp: settings and the composition root, in-process")
struct HeraldAppTests {
    /// In process, the suite's other tests share the process's threads: a graceful stop may take
    /// longer than the default 20 s, and ServiceLifecycle ends the whole test process when a
    /// cancelled one lags past 5 s.
    static let inProcessShutdown = ["HERALD_SHUTDOWN_GRACE_SECONDS": "600"]

    /// A scratch directory removed after the test.
    static func withDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-app-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await body(directory)
    }

    static func refusal(_ environment: [String: String]) -> HeraldConfigurationError? {
        do {
            _ = try ServeSettings(environment: environment)
            return nil
        } catch let error as HeraldConfigurationError {
            return error
        } catch {
            Issue.record("not a configuration error: \(error)")
            return nil
        }
    }

    /// The pushes the built-in APNs simulator recorded for `token`, once there is one (or after 30 s).
    static func pushes(to token: String, control: String) async throws -> Int {
        for _ in 0..<300 {
            let (_, data) = try await http("GET", control + "/notifications?token=" + token)
            let count = ((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [Any])?.count ?? 0
            if count > 0 { return count }
            try await Task.sleep(for: .milliseconds(100))
        }
        return 0
    }

    @Test("registration takes the token kinds each service's rule names: FIDs on Android only")
    func tokenKindsPerService() {
        let rules = PushServiceRegistry.builtIn.services
        #expect(rules.first { $0.platform == .android }?.tokenKinds == [.token, .fid])
        #expect(rules.first { $0.platform == .ios }?.tokenKinds == [.token])
        #expect(rules.first { $0.platform == .web }?.tokenKinds == [.token])
        #expect(RecordingService().tokenKinds == [.token])
    }

    @Test("a published push meets the limits of the services the instance has, and only theirs")
    func publishLimitsPerService() throws {
        // Apple takes a 2,000-byte alert; the recorder refuses it. An alert push without an alert
        // is Apple's refusal, which a registry without APNs does not make.
        let long = try CustomTemplate.render(aps: .object([.init("alert", .string(String(repeating: "x", count: 2_000)))]), checkedBy: [])
        let silentAlert = try CustomTemplate.render(aps: .object([.init("content-available", .int(1))]), pushType: .alert, checkedBy: [])
        let builtIn = PushServiceRegistry.builtIn.publishLimits
        let withRecorder = PushServiceRegistry(PushServiceRegistry.builtIn.services + [RecordingService()]).publishLimits
        let recorderOnly = PushServiceRegistry([RecordingService()]).publishLimits
        #expect(throws: Never.self) { try builtIn.check(long) }
        #expect { try withRecorder.check(long) } throws: { ($0 as? TemplateError).map { $0.field == "fields" && $0.isTooLarge } == true }
        #expect { try builtIn.check(silentAlert) } throws: { ($0 as? TemplateError)?.field == "fields.push_type" }
        #expect(throws: Never.self) { try recorderOnly.check(silentAlert) }
    }

    @Test("a value Herald cannot use is refused naming its variable")
    func refusesNamingTheVariable() {
        #expect(Self.refusal(["HERALD_HTTP_PORT": "70000"])?.field == "HERALD_HTTP_PORT")
        #expect(Self.refusal(["HERALD_HTTP_PORT": "8090", "HERALD_ADMIN_PORT": "8090"])?.field == "HERALD_ADMIN_PORT")
        #expect(Self.refusal(["HERALD_DATABASE_URL": "mysql://x"])?.field == "HERALD_DATABASE_URL")
        #expect(Self.refusal(["HERALD_RETENTION_HOURS": "-1"])?.field == "HERALD_RETENTION_HOURS")
        #expect(Self.refusal(["HERALD_KASPA_NETWORK": "moonnet"])?.field == "HERALD_KASPA_NETWORK")
        #expect(Self.refusal(["HERALD_PUBLISH_KEYS": "short"])?.field == "HERALD_PUBLISH_KEYS")
        #expect(Self.refusal(["HERALD_REGISTRATION_POLICY": "bearer"])?.field == "HERALD_REGISTRATION_POLICY")
        #expect(Self.refusal([:]) == nil)
    }

    @Test("HERALD_CONFIG: its values win over the environment's, and an unknown key is refused naming the file and key")
    func configFileLayering() async throws {
        try await Self.withDirectory { directory in
            let file = directory.appendingPathComponent("herald.yaml")
            try """
            http_port: 9191
            apps:
              - id: kasia
                publish_keys: [kasia-backend-key-0001]
            """.write(to: file, atomically: true, encoding: .utf8)
            let settings = try ServeSettings(environment: ["HERALD_CONFIG": file.path, "HERALD_HTTP_PORT": "9292", "HERALD_PUBLISH_KEYS": "another-key-000001"])
            #expect(settings.port == 9191)
            #expect(settings.apps.map(\.settings.id) == ["kasia"])
            #expect(settings.apps.first?.settings.publishKeys == ["kasia-backend-key-0001"])

            try """
            http_port: 9191
            apps:
              - id: kasia
                publish_key: [kasia-backend-key-0001]
            """.write(to: file, atomically: true, encoding: .utf8)
            let refusal = try #require(Self.refusal(["HERALD_CONFIG": file.path]))
            #expect(refusal.description.contains("publish_key"))
            #expect(refusal.description.contains("herald.yaml") || refusal.field.contains("publish_key"))
        }
    }

    @Test("a device's sealing key lives a day by default; HERALD_SEALING_KEY_LIFETIME_SECONDS or an app's sealing_key_lifetime_seconds sets it, 0 a key per push")
    func sealingKeyLifetime() async throws {
        try await Self.withDirectory { directory in
            #expect(try ServeSettings(environment: [:]).apps.first?.settings.sealing?.sessions.lifetime == 86_400)
            let zero = try ServeSettings(environment: ["HERALD_SEALING_KEY_LIFETIME_SECONDS": "0"])
            #expect(zero.apps.first?.settings.sealing?.sessions.lifetime == 0)
            let file = directory.appendingPathComponent("herald.yaml")
            try """
            apps:
              - id: kasia
                sealing_key_lifetime_seconds: 3600
              - id: ghosttalk
            """.write(to: file, atomically: true, encoding: .utf8)
            let apps = try ServeSettings(environment: ["HERALD_CONFIG": file.path]).apps.map(\.settings)
            #expect(apps.map { $0.sealing?.sessions.lifetime } == [3_600, 86_400])
        }
    }

    @Test("the event loops are half the cores, at least one, unless HERALD_EVENT_LOOPS says")
    func eventLoops() throws {
        #expect([1, 2, 3, 8, 64].map { ServeSettings.defaultEventLoops(cores: $0) } == [1, 1, 1, 4, 32])
        #expect(try ServeSettings(environment: ["HERALD_EVENT_LOOPS": "4"]).eventLoops == 4)
    }

    @Test("buildApplication serves the API and the admin listener on its defaults, and stops on request")
    func buildsAndServes() async throws {
        try await Self.withDirectory { directory in
            let settings = try ServeSettings(environment: [
                "HERALD_HTTP_PORT": "0", "HERALD_ADMIN_PORT": "0", "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("h.sqlite").path,
                "HERALD_PUBLISH_KEYS": "in-process-publisher-key",
            ].merging(Self.inProcessShutdown) { $1 })
            let (ready, readyContinuation) = AsyncStream.makeStream(of: ListeningAddresses.self)
            try await settings.withStore { store in
                let application = try await buildApplication(settings: settings, store: store, logger: Logger(label: "test")) {
                    readyContinuation.yield($0)
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await application.run() }
                    var iterator = ready.makeAsyncIterator()
                    let addresses = try #require(await iterator.next())
                    #expect(addresses.simulators == ["apns", "fcm", "webpush"])
                    let api = "http://127.0.0.1:\(addresses.apiPort)"
                    let admin = "http://127.0.0.1:\(addresses.adminPort)"
                    #expect(try await http("GET", api + "/healthz").0 == 200)
                    #expect(try await http("GET", api + "/readyz").0 == 200)
                    // What the instance counts is on the admin listener only.
                    #expect(try await http("GET", api + "/metrics").0 == 404)
                    #expect(try await http("GET", admin + "/metrics").0 == 200)
                    // A device registered and an event published reach the built-in APNs simulator.
                    let token = String(repeating: "ab", count: 32)
                    let register = #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["session:s1"]}"#
                    #expect(try await http("POST", api + "/v1/push/register", register).0 == 200)
                    let event = #"{"template":"session.message","fields":{"session_id":"s1","message_id":"m1","timestamp":1697192400}}"#
                    #expect(try await http("POST", api + "/v1/events", event, bearer: "in-process-publisher-key").0 == 202)
                    #expect(try await Self.pushes(to: token, control: admin + "/simulators/apns") == 1)
                    await application.serviceGroup.triggerGracefulShutdown()
                    try await group.waitForAll()
                }
            }
        }
    }
}
