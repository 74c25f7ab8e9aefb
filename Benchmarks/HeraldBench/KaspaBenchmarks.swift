import ArgumentParser
import Foundation
import HeraldAPNsSimulator
import HeraldCore
import HeraldKaspa
import HeraldPushCore
import KasiaProtocol
import KaspaNodeSimulator

/// Transactions signed with the official Kaspa SDK (the chain source's test fixtures), as node JSON.
struct KaspaFixtures {
    let kasia: [[String: Any]]
    let plain: [String: Any]
    let message: [String: Any]
    let alice: String

    init(path: String) throws {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
        let cases = (object["cases"] as! [[String: Any]])
        func tx(_ name: String) -> [String: Any] { cases.first { $0["name"] as? String == name }!["tx"] as! [String: Any] }
        kasia = ["handshake", "contextual_message", "payment", "payment_kachat_pay", "legacy_handshake"].map(tx)
            + (object["bulk_messages"] as! [[String: Any]])
        plain = tx("plain_transfer")
        message = tx("contextual_message")
        alice = (object["addresses"] as! [String: String])["alice"]!
    }

    /// A copy with a fresh transaction id (and output indices intact).
    static func renamed(_ tx: [String: Any], _ n: Int) -> [String: Any] {
        var tx = tx
        var verbose = tx["verboseData"] as! [String: Any]
        let hex = String(n, radix: 16)
        verbose["transactionId"] = "e" + String(repeating: "0", count: 63 - hex.count) + hex
        tx["verboseData"] = verbose
        return tx
    }
}

/// Classification throughput: blockAddedNotification frames as a node sends them (300
/// transactions a block, 10% Kasia), decoded and classified as the chain source does.
struct KaspaClassify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "kaspa-classify")
    @Option(help: "The SDK fixtures (node JSON).") var fixtures = "Tests/HeraldKaspaTests/Fixtures/kasia_transactions.json"
    @Option(help: "Transactions per block.") var transactions = 300
    @Option(help: "Kasia transactions per block.") var kasiaPerBlock = 30
    @Option(help: "Seconds to run (bounded also by 100,000 blocks).") var seconds = 10.0

    func run() async throws {
        let f = try KaspaFixtures(path: fixtures)
        var n = 0
        let frames: [Data] = (0..<64).map { b in
            let txs: [[String: Any]] = (0..<transactions).map { i in
                n += 1
                return KaspaFixtures.renamed(i < kasiaPerBlock ? f.kasia[(b * kasiaPerBlock + i) % f.kasia.count] : f.plain, n)
            }
            let hash = String(format: "%064x", b + 1)
            let header: [String: Any] = [
                "hash": hash, "version": 1, "parentsByLevel": [[String(repeating: "0", count: 64)]],
                "hashMerkleRoot": String(repeating: "0", count: 64), "acceptedIdMerkleRoot": String(repeating: "0", count: 64),
                "utxoCommitment": String(repeating: "0", count: 64), "timestamp": 1_750_000_000_000 + b * 100, "bits": 486_722_099,
                "nonce": UInt64.max - UInt64(b), "daaScore": 100_000_000 + b, "blueWork": String(repeating: "0", count: 48),
                "blueScore": 100_000_000 + b, "pruningPoint": String(repeating: "0", count: 64),
            ]
            let frame: [String: Any] = ["method": "blockAddedNotification", "params": ["BlockAdded": ["block": ["header": header, "transactions": txs, "verboseData": ["hash": hash, "isChainBlock": true, "mergeSetBluesHashes": [hash], "mergeSetRedsHashes": [String]()]]]]]
            return try! JSONSerialization.data(withJSONObject: frame)
        }
        let classifier = KasiaClassifier()
        let started = ContinuousClock.now
        var blocks = 0, seen = 0, events = 0, needsSender = 0
        while blocks < 100_000 {
            guard case .notification(.blockAdded(let block))? = KaspaFrame.decode(frames[blocks % frames.count]) else {
                throw BenchError("a frame did not decode")
            }
            for tx in block.transactions {
                seen += 1
                switch classifier.classify(tx, timestamp: 1_750_000_000, daaScore: block.header.daaScore) {
                case .event: events += 1
                case .needsSender: needsSender += 1
                default: break
                }
            }
            blocks += 1
            if blocks % 16 == 0, (ContinuousClock.now - started).seconds >= seconds { break }
        }
        let elapsed = (ContinuousClock.now - started).seconds
        let bytes = frames.map(\.count).reduce(0, +) / frames.count
        report([
            "benchmark": "kaspa-classify", "transactions_per_block": transactions, "kasia_per_block": kasiaPerBlock,
            "frame_bytes": bytes, "blocks_per_second": Int(Double(blocks) / elapsed), "transactions_per_second": Int(Double(seen) / elapsed),
            "times_real_chain": Double(seen) / elapsed / 3_000, "kasia_classified": events + needsSender,
        ])
    }
}

/// Block-to-push latency: the node simulator produces one block every 100 ms, each with a Kasia
/// message to a registered device; from the block's production to the push's arrival at APNs.
struct KaspaLatency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "kaspa-latency")
    @OptionGroup var rig: RigOptions
    @Option(help: "The SDK fixtures (node JSON).") var fixtures = "Tests/HeraldKaspaTests/Fixtures/kasia_transactions.json"
    @Option(help: "Blocks per second.") var rate = 10
    @Option(help: "Seconds measured (after 2 s of warm-up).") var seconds = 30
    @Option(help: "Other (non-Kasia) transactions per block.") var filler = 299
    @Option(help: "Whether the node answers getVirtualChainFromBlockV2 (asked for each message's unknown coin; it has none here, so the return address is asked too).")
    var nodeV2 = true

    func run() async throws {
        let f = try KaspaFixtures(path: fixtures)
        let node = try await KaspaNodeSimulator.start()
        node.setAnswersV2(nodeV2)
        try await Rig.with(heraldPath: self.rig.herald, postgresURL: rig.postgresURL) { rig in
            try await rig.prefill(devices: 1) { _ in .kaspaAddress(try! KaspaAddress(f.alice)) }
            try await rig.launch(environment: ["HERALD_KASPA_WRPC_URL": node.url])
            for _ in 0..<200 {
                if (try await rig.getAdminJSON("/v1/stats")["kaspa"] as? [String: Any])?["connected"] as? Bool == true { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            let fillers = (0..<filler).map { KaspaFixtures.renamed(f.plain, 1_000_000 + $0) }
            let total = (seconds + 2) * rate
            let interval = Duration.milliseconds(1000 / rate)
            var produced: [String: Int64] = [:]
            var allIDs: [String] = []
            let start = ContinuousClock.now
            var cpuAtWarm = 0.0
            for i in 0..<total {
                try await Task.sleep(until: start + interval * i, clock: .continuous)
                if i == 2 * rate { cpuAtWarm = try rig.cpuSeconds() }
                let tx = KaspaFixtures.renamed(f.message, i)
                let id = (tx["verboseData"] as! [String: Any])["transactionId"] as! String
                await node.produce([tx] + fillers, senders: [id: f.alice])
                // From the moment the node has sent the block and its acceptance (the simulator
                // builds its JSON first, on these same cores).
                let at = Int64(Date().timeIntervalSince1970 * 1000)
                if i >= 2 * rate { produced[id] = at }
                allIDs.append(id)
            }
            let arrived = try await rig.waitForAccepted(total, timeout: .seconds(60))
            let source = try await rig.getAdminJSON("/v1/stats")["kaspa"] as? [String: Any] ?? [:]
            // Herald's CPU per measured block (its filler transactions, the Kasia message, the push).
            let cpuPerBlock = (try rig.cpuSeconds() - cpuAtWarm) * 1000 / Double(total - 2 * rate)
            var latencies: [Double] = []
            for n in rig.simulator.notifications() {
                if let id = n.collapseID, let at = produced[id] { latencies.append(Double(n.receivedAtMs - at)) }
            }
            latencies.sort()
            let got = Set(rig.simulator.notifications().compactMap(\.collapseID))
            let missing = allIDs.enumerated().filter { !got.contains($0.element) }.map(\.offset)
            if !missing.isEmpty { FileHandle.standardError.write(Data("missing blocks: \(missing)\n".utf8)) }
            report([
                "benchmark": "kaspa-latency", "blocks_per_second": rate, "node_v2": nodeV2, "coin_lookups": source["coin_lookups"] ?? 0,
                "herald_cpu_ms_per_block": (cpuPerBlock * 100).rounded() / 100, "transactions_per_block": filler + 1, "measured": latencies.count,
                "all_arrived": arrived, "arrived": rig.simulator.stats.accepted, "produced": total, "p50_ms": percentile(latencies, 0.5), "p99_ms": percentile(latencies, 0.99), "max_ms": latencies.last ?? 0,
            ])
        }
        await node.shutdown()
    }
}
