import ArgumentParser
import Crypto
import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldDelivery
import HeraldPushCore
import HeraldStore
import HeraldWebPush
import HeraldWebPushCore
import HeraldWebPushService
import NIOCore
import NIOPosix

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import WebPushCrypto

/// Web Push: encrypt (RFC 8291) + sign (VAPID, cached per origin) + send over TLS to `herald
/// mock-webpush` in its own process, which checks and decrypts every message, in batches as an
/// outbox lane hands them to the provider. Reported: messages per second, and this process's CPU
/// time per message (its threads: one event loop and the task pool), so the figure compares
/// across machines; then encryption alone.
struct WebPushThroughput: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "webpush")
    @Option(help: "The herald binary (a release build), for its mock-webpush.") var herald = ".build/release/herald"
    @Option(help: "Messages to send (bounded also by --seconds).") var messages = 30_000
    @Option(help: "Seconds to run at most.") var seconds = 30.0
    @Option(help: "Deliveries per provider call, as a lane hands them over (at most its 500 in flight).") var batch = 500
    @Option(help: "Subscriptions to spread them over.") var subscriptions = 200

    func run() async throws {
        // The push service, in its own process: its CPU is not Herald's.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-webpush-\(getpid())")
        let simulator = Process()
        simulator.executableURL = URL(fileURLWithPath: herald)
        simulator.arguments = ["mock-webpush", "--ca-out", directory.path]
        let out = Pipe()
        simulator.standardOutput = out
        simulator.standardError = FileHandle.nullDevice
        try simulator.run()
        defer { simulator.terminate() }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { throw BenchError("mock-webpush exited") }
            line += chunk
        }
        let ready = try JSONSerialization.jsonObject(with: line.split(separator: UInt8(ascii: "\n"))[0]) as! [String: Any]
        let port = ready["port"] as! Int
        let control = "http://127.0.0.1:\(ready["control_port"] as! Int)"

        let key = VAPIDKey(privateKey: .init())
        let signer = VAPIDSigner(key: key, subject: try VAPIDSubject("mailto:bench@example.com"))
        var devices: [DeviceRecord] = []
        for i in 0..<subscriptions {
            var request = URLRequest(url: URL(string: control + "/subscribe")!)
            request.httpMethod = "POST"
            request.httpBody = Data(#"{"application_server_key":"\#(key.applicationServerKey)"}"#.utf8)
            let (data, _) = try await URLSession.shared.data(for: request)
            let sub = try JSONSerialization.jsonObject(with: data) as! [String: Any]
            let keys = sub["keys"] as! [String: String]
            let now = Date()
            devices.append(DeviceRecord(
                rowID: Int64(i), app: "bench", platform: .web, token: sub["endpoint"] as! String,
                attributes: DeviceAttributes(production: true).setting(webPushKeys: try WebPushKeys(p256dh: keys["p256dh"]!, auth: keys["auth"]!)),
                createdAt: now, updatedAt: now, lastSeen: now))
        }
        var configuration = WebPushClientConfiguration(
            endpointGuard: WebPushEndpointGuard(policy: WebPushAddressPolicy(allowedHosts: ["127.0.0.1:\(port)"])),
            trustRootsPEMFiles: [ready["ca"] as! String])
        configuration.maximumConnectionsPerOrigin = 16
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let client = try WebPushClient(configuration: configuration, eventLoopGroup: group)
        let provider = WebPushProvider(client: client, signer: signer)
        // A Kasia-sized alert: the JSON an APNs push of a contextual message carries.
        let payload = Array(#"{"aps":{"alert":{"title":"New message","body":"You have a new message"},"mutable-content":1,"thread-id":"kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"},"kasia":{"type":"contextual_message","tx_id":"e0000000000000000000000000000000000000000000000000000000000000001","sender":"kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj","alias":"a1b2c3d4e5f6","payload":"\#(String(repeating: "ab", count: 300))"}}"#.utf8)
        // The lane's deliveries, made before the clock starts (a lane reads them from its store).
        let expiresAt = Date().addingTimeInterval(3600)
        let deliveries = (0..<(messages + batch)).map { n in
            ClaimedDelivery(
                id: Int64(n), eventID: "e\(n)", device: devices[n % devices.count],
                push: RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: payload), apnsID: UUID(), attempt: 1,
                expiresAt: expiresAt)
        }
        // Warm up: connections open (the first batch to an origin goes message by message), VAPID token signed.
        _ = await provider.send(Array(deliveries[messages...]))
        _ = await provider.send(Array(deliveries[messages...]))

        let cpuBefore = Self.cpuSeconds()
        let started = ContinuousClock.now
        let deadline = started + .seconds(seconds)
        // As a lane does: a batch to the provider, its outcomes, the next batch.
        var sent = 0, failed = 0, next = 0
        while next < messages, ContinuousClock.now < deadline {
            let outcomes = await provider.send(Array(deliveries[next..<min(next + batch, messages)]))
            next += outcomes.count
            for outcome in outcomes { if outcome == .delivered { sent += 1 } else { failed += 1 } }
        }
        let elapsed = (ContinuousClock.now - started).seconds
        let cpu = Self.cpuSeconds() - cpuBefore
        await client.shutdown()
        try await group.shutdownGracefully()

        // Encryption alone, on this thread.
        let keys = devices[0].attributes.webPushKeys!
        let encryptCount = 5_000
        let encryptCPU = Self.cpuSeconds()
        for _ in 0..<encryptCount { _ = try WebPushEncryption.encrypt(payload, to: keys) }
        let encryptPerMessage = (Self.cpuSeconds() - encryptCPU) / Double(encryptCount)

        // Its parts, to see where the time goes.
        func perCall(_ body: () throws -> Void) rethrows -> Double {
            let before = Self.cpuSeconds()
            for _ in 0..<encryptCount { try body() }
            return (Self.cpuSeconds() - before) / Double(encryptCount) * 1e6
        }
        let receiver = try P256.KeyAgreement.PublicKey(x963Representation: keys.p256dh)
        let sample = P256.KeyAgreement.PrivateKey()
        let keygen = perCall { _ = P256.KeyAgreement.PrivateKey() }
        let scalar = Array(sample.rawRepresentation)
        let fromRaw = try perCall { _ = try P256.KeyAgreement.PrivateKey(rawRepresentation: scalar) }
        let parse = try perCall { _ = try P256.KeyAgreement.PublicKey(x963Representation: keys.p256dh) }
        let ecdh = try perCall { _ = try sample.sharedSecretFromKeyAgreement(with: receiver) }
        let export = perCall { _ = sample.publicKey.x963Representation }
        let parts = (String(format: "  of which: a fresh key from a random scalar %.1f µs (swift-crypto's own generator, not used: %.1f µs), parsing p256dh (once per subscription) %.1f µs, ECDH %.1f µs, exporting the ephemeral key %.1f µs", fromRaw, keygen, parse, ecdh, export))

        let (statsData, _) = try await URLSession.shared.data(from: URL(string: control + "/stats")!)
        let accepted = (try JSONSerialization.jsonObject(with: statsData) as? [String: Any])?["accepted"] as? Int ?? 0
        print(String(format: "webpush: %d messages (%d bytes of plaintext each) in %.2f s: %.0f messages/s; %d refused", sent, payload.count, elapsed, Double(sent) / elapsed, failed))
        print(String(format: "  CPU of this process: %.1f µs per message (%.0f messages/s per core)", cpu / Double(max(sent, 1)) * 1e6, Double(sent) / max(cpu, 1e-9)))
        print(String(format: "  encryption alone: %.1f µs per message (%.0f messages/s per core)", encryptPerMessage * 1e6, 1 / encryptPerMessage))
        print(parts)
        print("  the simulator accepted and decrypted \(accepted) (warm-up included)")
    }

    /// This process's CPU time (user + system), every thread.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}
