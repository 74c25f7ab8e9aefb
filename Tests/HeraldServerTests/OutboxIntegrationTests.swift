import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsSimulator
import HeraldCore
import HeraldServer
import HeraldStore
import NIOPosix
import Testing

/// The real APNs client and simulator (TLS + HTTP/2 on 127.0.0.1) and a SQLite store, in a temporary folder.
struct OutboxHarness {
    let directory: URL
    let group: MultiThreadedEventLoopGroup
    let simulator: APNsSimulator
    let client: APNsClient
    let store: SQLiteStore

    static func with(_ body: (OutboxHarness) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-outbox-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let key = APNsSigningKey(privateKey: P256.Signing.PrivateKey(), keyID: "OUTBOX0001", teamID: "TEAM000001")
        var configuration = APNsSimulatorConfiguration()
        configuration.port = 0
        configuration.controlPort = 0
        configuration.keys = [SimulatorKey(keyID: key.keyID, teamID: key.teamID, publicKey: key.publicKey)]
        let simulator = try await APNsSimulator.start(configuration: configuration, eventLoopGroup: group)
        let client = try APNsClient(
            configuration: APNsClientConfiguration(
                environment: .sandbox, url: simulator.url, trustRootsPEMFile: try simulator.writeCA(to: directory.path)),
            tokens: APNsProviderTokenSource(key: key), eventLoopGroup: group)
        let store = try SQLiteStore(path: directory.appendingPathComponent("herald.sqlite").path)
        try await store.migrate()
        let harness = OutboxHarness(directory: directory, group: group, simulator: simulator, client: client, store: store)
        do {
            try await body(harness)
        } catch {
            await harness.close()
            throw error
        }
        await harness.close()
    }

    func close() async {
        await client.shutdown()
        await simulator.shutdown()
        try? await group.shutdownGracefully()
    }
}

/// The outbox with the real APNs client and simulator (TLS + HTTP/2 on 127.0.0.1) and a SQLite file.
@Suite("Outbox against the simulator", .serialized)
struct OutboxIntegrationTests {
    @Test("a 30-second 503 outage: every delivery arrives afterwards, with backed-off attempts (no hot loop)")
    func outage() async throws {
        try await OutboxHarness.with { h in
            let (simulator, client, store) = (h.simulator, h.client, h.store)
            let devices = 100
            var rows: [Int64] = []
            for i in 0..<devices {
                let hex = String(i, radix: 16)
                let token = try DeviceToken(String(repeating: "0", count: 64 - hex.count) + hex, platform: .ios)
                rows.append(try await store.register(
                    Registration(app: "default", token: token, environment: .sandbox, watchSet: .empty), now: Date()).rowID)
            }
            try simulator.inject(SimulatorFault(kind: .respond, status: 503, reason: "ServiceUnavailable", durationMs: 30_000))
            let push = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(#"{"aps":{"alert":"x"}}"#.utf8))
            _ = try await store.enqueue(
                [NewEvent(id: "e", app: "default", template: "custom", push: push, expiresAt: Date().addingTimeInterval(3_600), deviceRowIDs: rows)],
                checkpoint: nil, now: Date())

            // SPEC's back-off (1 s base, full jitter) with an 8-second cap, so recovery takes seconds in a test.
            let outbox = Outbox(
                store: store, provider: APNsPushProvider(client: client, topic: "com.example.outage"),
                retryPolicy: RetryPolicy(base: .seconds(1), cap: .seconds(8)))
            let running = Task { await outbox.run() }
            let started = ContinuousClock.now
            while simulator.notifications().count < devices, ContinuousClock.now - started < .seconds(90) {
                try await Task.sleep(for: .milliseconds(250))
            }
            running.cancel()
            await running.value

            #expect(Set(simulator.notifications().map(\.token)).count == devices)
            let elapsed = ContinuousClock.now - started
            #expect(elapsed >= .seconds(30) && elapsed < .seconds(60), "\(elapsed)")
            // Full-jitter back-off from 1 s capped at 8 s averages ~4 s a try once capped: about 11 tries per
            // delivery in 30 s. A hot loop (the outbox polls every 200 ms) would be hundreds.
            let refused = simulator.stats.reasons["ServiceUnavailable"] ?? 0
            #expect(refused >= devices && refused <= devices * 20, "\(refused) refused attempts")
            #expect(try await store.stats().deliveries[.sent] == devices)
        }
    }

    @Test("410: a timestamp older than the last registration keeps the device; a newer one deletes it")
    func unregisteredOrdering() async throws {
        try await OutboxHarness.with { h in
            let (simulator, client, store) = (h.simulator, h.client, h.store)
            let registered = Date()
            let keep = String(repeating: "0a", count: 32), gone = String(repeating: "0b", count: 32)
            var rows: [Int64] = []
            for token in [keep, gone] {
                rows.append(try await store.register(
                    Registration(app: "default", token: try DeviceToken(token, platform: .ios), environment: .sandbox,
                                 watchSet: try WatchSet(watched: [WatchKey.session("s")])),
                    now: registered).rowID)
            }
            let ms = Int64(registered.timeIntervalSince1970 * 1000)
            try simulator.inject(SimulatorFault(kind: .unregistered, token: keep, timestampMs: ms - 60_000))
            try simulator.inject(SimulatorFault(kind: .unregistered, token: gone, timestampMs: ms + 60_000))
            let push = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(#"{"aps":{"alert":"x"}}"#.utf8))
            _ = try await store.enqueue(
                [NewEvent(id: "e", app: "default", template: "custom", push: push, expiresAt: registered.addingTimeInterval(3_600), deviceRowIDs: rows)],
                checkpoint: nil, now: registered)

            let outbox = Outbox(store: store, provider: APNsPushProvider(client: client, topic: "com.example.gone"))
            let running = Task { await outbox.run() }
            let started = ContinuousClock.now
            // Done when both 410s are recorded: the kept device's delivery failed, the other device is gone
            // (its deliveries with it).
            while ContinuousClock.now - started < .seconds(20) {
                let failed = try await store.stats().deliveries[.failed] ?? 0
                let goneDevice = try await store.status(app: "default", token: gone, now: Date())
                if failed == 1, goneDevice == nil { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            running.cancel()
            await running.value

            #expect(simulator.stats.reasons["Unregistered"] == 2)
            #expect(try await store.status(app: "default", token: keep, now: Date()) != nil)
            #expect(try await store.status(app: "default", token: gone, now: Date()) == nil)
        }
    }
}
