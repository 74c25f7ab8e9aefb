import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldFCMCore
import HeraldPushCore
import HeraldStore
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Several `herald serve` processes sharing one PostgreSQL (runs when `HERALD_TEST_POSTGRES_URL` is set).
@Suite("Several herald serve processes on one PostgreSQL", .serialized, .enabled(if: TestPostgres.serverURL != nil))
struct MultiInstanceTests {
    /// Every fourth device is an Android phone (FCM), the rest iPhones (APNs).
    static func isAndroid(_ i: Int) -> Bool { i % 4 == 3 }
    static func fcmToken(_ i: Int) -> String { "fcm-multi_\(i):" + String(repeating: "M", count: 140) }

    @Test("3 instances, 20,000 events round-robin to iOS and Android devices, one SIGKILLed mid-delivery: every device reached, duplicates within the window, one JWT and one FCM access token")
    func threeInstances() async throws {
        let devices = 20_000
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-multi-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        try await TestPostgres.withDatabase(serverURL: TestPostgres.serverURL!) { database in
            // The devices, written straight into the database.
            let store = try PostgresStore(url: database)
            let pool = Task { await store.run() }
            try await store.migrate()
            for start in stride(from: 0, to: devices, by: 5_000) {
                _ = try await store.register(try (start..<start + 5_000).map { i in
                    Registration(app: "default", token: Self.isAndroid(i) ? try FCMTokenRule().token(Self.fcmToken(i))
                                     : try APNsTokenRule().token(hexToken(i)), attributes: DeviceAttributes(production: false),
                                 watchSet: try WatchSet(watched: [WatchKey.session("s\(i)")]))
                }, now: Date())
            }
            pool.cancel()

            let mock = try MockAPNsProcess(directory: directory, topic: "com.example.multi")
            defer { mock.process.kill(SIGTERM) }
            let fcm = try MockFCMProcess(directory: directory.appendingPathComponent("fcm"))
            defer { fcm.process.kill(SIGTERM) }
            var env = mock.serveEnvironment.merging(fcm.serveEnvironment) { _, new in new }
            env.merge([
                "HERALD_DATABASE_URL": database, "HERALD_HTTP_PORT": "0", "HERALD_PUBLISH_KEYS": "publisher-key-00001",
                "HERALD_OUTBOX_LEASE_SECONDS": "30", "HERALD_PUBLISH_RATE": "0", "HERALD_SIGNING_KEY_PATH": try signingKeyFile(in: directory),
            ]) { _, new in new }
            let instances = try (0..<3).map { _ in try HeraldProcess(["serve"], environment: env) }
            defer { for instance in instances where instance.process.isRunning { instance.kill(SIGKILL) } }
            let apis = try instances.map { try $0.ready().api }
            // Slow answers keep deliveries in flight when an instance dies.
            _ = try await http("POST", mock.control + "/faults", #"{"kind":"delay","delay_ms":4000}"#)

            // Publish round-robin while the first instance is killed mid-delivery; a batch sent to the
            // dead one goes to the next, as a client behind a load balancer would retry.
            let killed = Task {
                var accepted = 0
                while accepted < 2_000 {
                    try await Task.sleep(for: .milliseconds(50))
                    accepted = try await mock.accepted()
                }
                instances[0].kill(SIGKILL)
                return accepted
            }
            let batchSize = 250
            // Batches sent again after an attempt got no answer: the dead instance may have committed them.
            var resent = 0
            for (n, batch) in stride(from: 0, to: devices, by: batchSize).enumerated() {
                let events = (batch..<batch + batchSize).map {
                    #"{"template":"custom","targets":{"keys":["session:s\#($0)"]},"fields":{"aps":{"alert":"n\#($0)"}}}"#
                }.joined(separator: ",")
                var status = 0
                for attempt in 0..<3 where status != 202 {
                    if attempt > 0 { resent += 1 }
                    status = (try? await http("POST", apis[(n + attempt) % 3] + "/v1/events:batch", #"{"events":[\#(events)]}"#, bearer: "publisher-key-00001"))?.0 ?? 0
                }
                #expect(status == 202)
            }
            let accepted = try await killed.value
            #expect(accepted < devices, "killed after \(accepted) pushes")

            // The survivors deliver the rest, and the dead one's leased deliveries once its leases expire.
            var tokens = Set<String>()
            var total = 0
            for _ in 0..<240 {
                let (apns, fcmDelivered) = (try await mock.delivered(), try await fcm.delivered())
                (tokens, total) = (apns.tokens.union(fcmDelivered.tokens), apns.total + fcmDelivered.total)
                if tokens.count == devices { break }
                try await Task.sleep(for: .milliseconds(500))
            }
            #expect(tokens.filter { $0.hasPrefix("fcm-multi_") }.count == devices / 4, "Android devices reached")
            #expect(tokens.count == devices, "\(tokens.count) of \(devices) devices got their push")
            let duplicates = total - tokens.count
            // What can arrive twice follows from the configuration: the killed instance's deliveries
            // in flight (two lanes, APNs and FCM, one claimed batch of at most 500 each), and the events of batches the
            // client sent again because the dying instance did not answer (it may have committed
            // them). SKIP LOCKED claims never hand one delivery to two live instances.
            let inFlightWindow = 2 * 500
            #expect(duplicates <= inFlightWindow + resent * batchSize, "\(duplicates) duplicates, \(resent) batches sent again")
            // One JWT for the key across all three instances (the run lasts minutes, well inside the
            // 20-minute floor): the store is their ledger, so none minted its own.
            let keyID = try #require(mock.serveEnvironment["HERALD_APNS_KEY_ID"])
            let jwts = try await mock.providerTokens()
            #expect(jwts == [keyID: 1], "distinct provider tokens per key: \(jwts)")
            // One FCM access token too: one grant exchanged for all three instances.
            let fcmStats = try await fcm.stats()
            #expect(fcmStats["token_grants"] as? Int == 1, "\(fcmStats)")
            print("multi-instance: killed one of 3 after \(accepted) pushes; \(tokens.count) devices reached; \(duplicates) duplicates (\(resent) batches sent again); provider tokens \(jwts)")
            for instance in instances.dropFirst() {
                instance.kill(SIGTERM)
                #expect(instance.exitStatus == 0)
            }
        }
    }
}
