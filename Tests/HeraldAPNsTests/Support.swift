import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldAPNsSimulator
import HeraldPushCore
import HeraldTestSupport
import NIOCore
import NIOPosix
import Synchronization
import Testing

/// A running simulator on 127.0.0.1 with one trusted key, and clients that trust it.
struct SimulatorFixture {
    static let topic = "com.example.herald"
    let group: MultiThreadedEventLoopGroup
    let simulator: APNsSimulator
    let key: APNsSigningKey
    let otherKey: APNsSigningKey
    let caPath: String
    /// The private half of `key`, for tests that forge tokens.
    let privateKey: P256.Signing.PrivateKey

    /// Runs `body` against a fresh simulator and tears everything down afterwards.
    static func with<T>(
        topics: Set<String> = [topic],
        _ body: (SimulatorFixture) async throws -> T
    ) async throws -> T {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let privateKey = P256.Signing.PrivateKey()
        let key = APNsSigningKey(privateKey: privateKey, keyID: "KEY1234567", teamID: "TEAM123456")
        let otherKey = APNsSigningKey(privateKey: P256.Signing.PrivateKey(), keyID: "KEY7654321", teamID: "TEAM123456")
        var configuration = APNsSimulatorConfiguration()
        configuration.port = 0
        configuration.controlPort = 0
        configuration.topics = topics
        configuration.keys = [
            SimulatorKey(keyID: key.keyID, teamID: key.teamID, publicKey: key.publicKey),
            SimulatorKey(keyID: otherKey.keyID, teamID: otherKey.teamID, publicKey: otherKey.publicKey),
        ]
        let simulator = try await APNsSimulator.start(configuration: configuration, eventLoopGroup: group)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-test-\(UUID())").path
        let caPath = try simulator.writeCA(to: directory)
        let fixture = SimulatorFixture(
            group: group, simulator: simulator, key: key, otherKey: otherKey, caPath: caPath, privateKey: privateKey)
        do {
            let result = try await body(fixture)
            await simulator.shutdown()
            try await group.shutdownGracefully()
            try? FileManager.default.removeItem(atPath: directory)
            return result
        } catch {
            await simulator.shutdown()
            try? await group.shutdownGracefully()
            throw error
        }
    }

    func makeClient(
        connections: Int = 2, timeout: Duration = .seconds(10), tokens: APNsProviderTokenSource? = nil, environment: APNsEnvironment = .production
    ) throws -> APNsClient {
        var configuration = APNsClientConfiguration(environment: environment, url: simulator.url(for: environment), trustRootsPEMFile: caPath)
        configuration.connections = connections
        configuration.requestTimeout = timeout
        return try APNsClient(
            configuration: configuration, tokens: tokens ?? APNsProviderTokenSource(key: key), eventLoopGroup: group)
    }
}

/// Test tokens: 64 hex characters, distinct per index.
func deviceToken(_ i: Int) -> String {
    let hex = String(i, radix: 16)
    return String(repeating: "0", count: 64 - hex.count) + hex
}

func alert(_ token: String, collapseID: String? = nil) -> APNsNotification {
    APNsNotification(
        deviceToken: token, topic: SimulatorFixture.topic, pushType: .alert, priority: .immediate,
        collapseID: collapseID, payload: Array(#"{"aps":{"alert":{"title":"Hello","body":"World"}}}"#.utf8))
}

/// Sends `notifications` with at most `concurrency` in flight; results in input order.
func sendAll(_ client: APNsClient, _ notifications: [APNsNotification], concurrency: Int = 200) async throws -> [APNsResult] {
    try await withThrowingTaskGroup(of: (Int, APNsResult).self) { group in
        var results = [APNsResult?](repeating: nil, count: notifications.count)
        var next = 0
        func addNext() {
            let i = next
            next += 1
            group.addTask { (i, try await client.send(notifications[i])) }
        }
        while next < min(concurrency, notifications.count) { addNext() }
        while let (i, result) = try await group.next() {
            results[i] = result
            if next < notifications.count { addNext() }
        }
        return results.map { $0! }
    }
}

/// HTTP/2 frames as bytes on the wire (RFC 9113 §4.1), for tests that write or read them raw.
enum WireFrame {
    static func encode(type: UInt8, flags: UInt8, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let length = UInt32(payload.count)
        return [UInt8(length >> 16), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, flags]
            + [UInt8(stream >> 24), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)] + payload
    }

    /// The next whole frame in `buffer`, taken from it; nil until one has fully arrived.
    static func read(from buffer: inout ByteBuffer) -> (type: UInt8, flags: UInt8, stream: UInt32, payload: ByteBuffer)? {
        guard buffer.readableBytes >= 9, let head = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self),
            buffer.readableBytes >= 9 + Int(head >> 8)
        else { return nil }
        buffer.moveReaderIndex(forwardBy: 3)
        let type = buffer.readInteger(as: UInt8.self)!
        let flags = buffer.readInteger(as: UInt8.self)!
        let stream = buffer.readInteger(as: UInt32.self)! & 0x7fff_ffff
        return (type, flags, stream, buffer.readSlice(length: Int(head >> 8))!)
    }
}
