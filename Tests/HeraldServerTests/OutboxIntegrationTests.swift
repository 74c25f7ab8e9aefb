import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldAPNsService
import HeraldAPNsSimulator
import HeraldCore
import HeraldDelivery
import HeraldPushCore
import HeraldServer
import HeraldStore
import KasiaProtocol
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// The real APNs client and simulator (TLS + HTTP/2 on 127.0.0.1) and a SQLite store, in a temporary folder.
struct OutboxHarness {
    let directory: URL
    let group: MultiThreadedEventLoopGroup
    let simulator: APNsSimulator
    /// One client per key, each with its own connections; the simulator knows every key.
    let clients: [APNsClient]
    let store: SQLiteStore
    var client: APNsClient { clients[0] }

    static func with(keys: Int = 1, requestTimeout: Duration = .seconds(10), _ body: (OutboxHarness) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-outbox-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let signingKeys = (0..<keys).map {
            APNsSigningKey(privateKey: P256.Signing.PrivateKey(), keyID: "OUTBOX000\($0)", teamID: "TEAM000001")
        }
        var configuration = APNsSimulatorConfiguration()
        configuration.port = 0
        configuration.controlPort = 0
        configuration.keys = signingKeys.map { SimulatorKey(keyID: $0.keyID, teamID: $0.teamID, publicKey: $0.publicKey) }
        let simulator = try await APNsSimulator.start(configuration: configuration, eventLoopGroup: group)
        let ca = try simulator.writeCA(to: directory.path)
        let clients = try signingKeys.map { key in
            var configuration = APNsClientConfiguration(environment: .sandbox, url: simulator.url, trustRootsPEMFile: ca)
            configuration.requestTimeout = requestTimeout
            return try APNsClient(configuration: configuration, tokens: APNsProviderTokenSource(key: key), eventLoopGroup: group)
        }
        let store = try SQLiteStore(path: directory.appendingPathComponent("herald.sqlite").path)
        try await store.migrate()
        let harness = OutboxHarness(directory: directory, group: group, simulator: simulator, clients: clients, store: store)
        do {
            try await body(harness)
        } catch {
            await harness.close()
            throw error
        }
        await harness.close()
    }

    /// Registers `count` devices of `app` with tokens numbered from `first`; returns their row ids and tokens.
    func register(app: String, count: Int, first: Int = 0) async throws -> (rows: [Int64], tokens: [String]) {
        var rows: [Int64] = [], tokens: [String] = []
        for i in first..<(first + count) {
            let hex = String(i, radix: 16)
            let token = String(repeating: "0", count: 64 - hex.count) + hex
            tokens.append(token)
            rows.append(try await store.register(
                Registration(app: app, token: try APNsTokenRule().token(token), attributes: DeviceAttributes(apnsEnvironment: .sandbox), watchSet: .empty),
                now: Date()).rowID)
        }
        return (rows, tokens)
    }

    /// Commits one event of `app` to `rows`.
    func enqueue(app: String, rows: [Int64], push: RenderedPush = OutboxHarness.alert, id: String = UUID().uuidString) async throws {
        _ = try await store.enqueue(
            [NewEvent(id: id, app: app, template: "custom", push: push, expiresAt: Date().addingTimeInterval(3_600), deviceRowIDs: rows)],
            checkpoint: nil, now: Date())
    }

    static let alert = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(#"{"aps":{"alert":"x"}}"#.utf8))

    /// Waits until `done` holds or `limit` passes.
    func wait(upTo limit: Duration, until done: () async throws -> Bool) async rethrows {
        let started = ContinuousClock.now
        while ContinuousClock.now - started < limit {
            if try await done() { return }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    func close() async {
        for client in clients { await client.shutdown() }
        await simulator.shutdown()
        try? await group.shutdownGracefully()
    }
}

/// The outbox with the real APNs client and simulator (TLS + HTTP/2 on 127.0.0.1) and a SQLite file.
@Suite("Outbox against the simulator", .serialized)
struct OutboxIntegrationTests {
    @Test("413: the push is shrunk and retried once, else it fails")
    func shrinkOnce() async throws {
        try await OutboxHarness.with { h in
            let devices = try await h.register(app: "default", count: 2)
            let (kasiaToken, customToken) = (devices.tokens[0], devices.tokens[1])
            _ = try h.simulator.inject(SimulatorFault(kind: .respond, token: kasiaToken, status: 413, count: 1))
            _ = try h.simulator.inject(SimulatorFault(kind: .respond, token: customToken, status: 413))
            let kasia = KasiaTemplate.render(KasiaEvent(
                kind: .contextualMessage, txID: String(repeating: "ab", count: 32), sender: "kaspa:sender",
                payloadHex: String(repeating: "cd", count: 200), timestamp: 1_700_000_000, daaScore: 42))
            let custom = RenderedPush(
                pushType: .alert, priority: .immediate, collapseID: nil,
                payload: JSONValue.object([.init("aps", .object([.init("alert", .object([
                    .init("title", .string("t")), .init("body", .string(String(repeating: "b", count: 300))),
                ]))]))]).encoded)
            try await h.enqueue(app: "default", rows: [devices.rows[0]], push: kasia)
            try await h.enqueue(app: "default", rows: [devices.rows[1]], push: custom)

            let outbox = Outbox(queue: h.store, providers: [("default", [APNsPushProvider(client: h.client, topic: "com.example.shrink")])])
            let running = Task { await outbox.run() }
            await h.wait(upTo: .seconds(10)) {
                let stats = try? await h.store.stats()
                return stats?.deliveries[.sent] == 1 && stats?.deliveries[.failed] == 1
            }
            running.cancel()
            await running.value

            let delivered = try #require(h.simulator.notifications(token: kasiaToken).first)
            let expected = try #require(kasia.shrunk())
            #expect(delivered.payload == String(decoding: expected.payload, as: UTF8.self))
            #expect(delivered.payload.contains(#""payload":null"#))
            #expect(h.simulator.notifications(token: customToken).isEmpty)
            #expect(h.simulator.stats.reasons["PayloadTooLarge"] == 3)
            #expect(try await h.store.stats().failureReasons["PayloadTooLarge"] == 1)
        }
    }

    @Test("each device goes to its own APNs environment: a sandbox build of a production app reaches the sandbox host")
    func perDeviceEnvironment() async throws {
        try await OutboxHarness.with(keys: 2) { h in
            // Two clients stand for Apple's two hosts: the production one signs with key 0, the sandbox one with key 1.
            let opened = Mutex<[APNsEnvironment]>([])
            let provider = APNsPushProvider(topic: "com.example.env") { environment in
                opened.withLock { $0.append(environment) }
                return environment == .production ? h.clients[0] : h.clients[1]
            }
            let production = String(repeating: "1a", count: 32), sandbox = String(repeating: "2b", count: 32)
            var rows: [Int64] = []
            for (token, environment) in [(production, APNsEnvironment.production), (sandbox, .sandbox)] {
                rows.append(try await h.store.register(
                    Registration(app: "default", token: try APNsTokenRule().token(token), attributes: DeviceAttributes(apnsEnvironment: environment), watchSet: .empty),
                    now: Date()).rowID)
            }
            try await h.enqueue(app: "default", rows: rows)
            let outbox = Outbox(queue: h.store, providers: [("default", [provider])])
            let running = Task { await outbox.run() }
            await h.wait(upTo: .seconds(10)) { (try? await h.store.stats().deliveries[.sent]) == 2 }
            running.cancel()
            await running.value

            #expect(h.simulator.notifications(token: production).map(\.keyID) == ["OUTBOX0000"])
            #expect(h.simulator.notifications(token: sandbox).map(\.keyID) == ["OUTBOX0001"])
            #expect(Set(opened.withLock { $0 }) == [.production, .sandbox] && opened.withLock { $0.count } == 2)
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
                    Registration(app: "default", token: try APNsTokenRule().token(token), attributes: DeviceAttributes(apnsEnvironment: .sandbox),
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

            let outbox = Outbox(queue: store, providers: [("default", [APNsPushProvider(client: client, topic: "com.example.gone")])])
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
