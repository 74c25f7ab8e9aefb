import Foundation
import HeraldCore
import HeraldStore
@testable import HeraldKaspa
import KaspaNodeSimulator
import Synchronization
import Testing

/// The node is a peer, not trusted: a hung node, a huge frame or a hostile value cannot hold or
/// corrupt the client.
@Suite("The Kaspa node as an untrusted peer")
struct NodeAsPeerTests {
    /// Runs `body`, or records a failure if it has not returned after `limit` (it must never hang).
    static func bounded<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    @Test("a node that never answers: the call ends with timedOut at its deadline")
    func hungNode() async throws {
        let node = try await KaspaNodeSimulator.start()
        node.setSilent(true)
        var configured = KaspaRPCClient(url: node.url)
        configured.callTimeout = .milliseconds(300)
        let client = configured
        let outcome: String? = try await Self.bounded(.seconds(60)) {
            do {
                _ = try await client.withSession { try await $0.getServerInfo() }
                return "answered"
            } catch {
                return "\(error)"
            }
        }
        #expect(outcome == "\(KaspaRPCError.timedOut(method: "getServerInfo"))")
        await node.shutdown()
    }

    @Test("a frame over the limit resets the connection: the session ends instead of buffering it")
    func oversizedFrame() async throws {
        // Node JSON, read-only from here on.
        nonisolated(unsafe) let transaction = try RawFixtures.load().bulk[0]
        let node = try await KaspaNodeSimulator.start()
        var configured = KaspaRPCClient(url: node.url)
        configured.maximumFrameSize = 1_024  // a block with a Kasia transaction is larger
        let client = configured
        let ended = try await Self.bounded(.seconds(60)) {
            try? await client.withSession { session in
                try await session.subscribeChain()
                await node.produce([transaction])
                for await _ in session.notifications {}
            }
            return true
        }
        #expect(ended == true)
        await node.shutdown()
    }

    @Test("a node whose notifications are not taken as fast as it sends them: past the buffer's bound the session ends (the source then reconnects and fills the gap)")
    func floodedNotifications() async throws {
        let node = try await KaspaNodeSimulator.start()
        let client = KaspaRPCClient(url: node.url)
        let taken: Int? = try await Self.bounded(.seconds(120)) {
            (try? await client.withSession { session in
                try await session.subscribeChain()
                // Two notifications a block; nothing takes them meanwhile.
                for _ in 0..<(KaspaRPCSession.maximumBufferedNotifications / 2 + 50) { _ = await node.produce([]) }
                // The session ends once the buffer overflows: calls then fail.
                while (try? await session.getServerInfo()) != nil { try await Task.sleep(for: .milliseconds(50)) }
                var taken = 0
                for await _ in session.notifications { taken += 1 }
                return taken
            }) ?? -1
        }
        let count = try #require(taken)
        // Ended by the overflow, not before it: the buffer held exactly its bound when it did.
        #expect(count == KaspaRPCSession.maximumBufferedNotifications, "\(count)")
        await node.shutdown()
    }

    @Test("what the chain source remembers stays under its byte budget, whatever the node's blocks carry")
    func boundedChainMemory() {
        // Small enough to cost little CPU: a synchronous test holds one of the task pool's two threads.
        let memory = ChainMemory(capacity: 10_000, maximumBytes: 1 << 20)
        let payload = RpcTransaction.kasiaPrefixHex + String(repeating: "ab", count: 50_000)
        for i in 0..<200 {
            let transaction = RpcTransaction(
                inputs: [], outputs: [], payload: payload,
                verboseData: RpcTransactionVerboseData(transactionId: String(format: "%064x", i), blockHash: nil, blockTime: nil))
            let hashes = (0..<20).map { String(format: "%064x", i * 10_000 + $0) }
            memory.remember(RpcBlock(
                header: RpcBlockHeader(hash: String(format: "b%063x", i), timestamp: 0, daaScore: UInt64(i), blueScore: nil, nonce: nil),
                transactions: [transaction],
                verboseData: RpcBlockVerboseData(hash: nil, selectedParentHash: nil, transactionIds: hashes, mergeSetBluesHashes: nil, mergeSetRedsHashes: nil, isChainBlock: true)))
            #expect(memory.footprint.bytes <= 1 << 20)
        }
        // The newest blocks are still there; the oldest made room.
        #expect(memory.block(String(format: "b%063x", 199)) != nil)
        #expect(memory.block(String(format: "b%063x", 0)) == nil)
        #expect(memory.footprint.blocks < 200)
        // A block keeps its header and merge set, not the transaction ids a node may send by the million.
        #expect(memory.block(String(format: "b%063x", 199))?.verboseData?.transactionIds == nil)
    }

    /// Records what the chain source commits.
    struct NullSink: KasiaEventSink {
        func commit(_ events: [KasiaEvent], checkpoint: ChainCheckpoint) async throws -> Int { 0 }
    }

    @Test("with the node gone, the lag keeps growing by the source's clock (so the lag alert fires), and connected says so")
    func lagGrowsWhileNodeAway() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-lag-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteStore(path: directory.appendingPathComponent("herald.sqlite").path)
        try await store.migrate()
        let node = try await KaspaNodeSimulator.start()
        let offset = Mutex<TimeInterval>(0)
        let source = KaspaChainSource(
            configuration: .init(url: node.url), store: store, sink: NullSink(), now: { Date().addingTimeInterval(offset.withLock { $0 }) })
        let running = Task { try await source.run() }
        defer { running.cancel() }
        let followed: Bool? = try await Self.bounded(.seconds(60)) {
            while !source.stats.connected { try await Task.sleep(for: .milliseconds(20)) }
            while source.stats.lastDaaScore == nil {
                _ = await node.produce([])
                try await Task.sleep(for: .milliseconds(50))
            }
            return true
        }
        #expect(followed == true)
        let before = try #require(source.stats.lagSeconds)
        await node.shutdown()
        let away: Bool? = try await Self.bounded(.seconds(60)) {
            while source.stats.connected { try await Task.sleep(for: .milliseconds(20)) }
            return true
        }
        #expect(away == true)
        offset.withLock { $0 = 600 }
        let after = try #require(source.stats.lagSeconds)
        #expect(after >= before + 599, "\(before) → \(after)")
    }

    @Test("V2: the node's answer gives the coins the transactions asked about spend; minConfirmationCount stops it at the block asked about")
    func spentCoinsFromV2() async throws {
        let chain = try ChainFixture.load()
        let node = try await KaspaNodeSimulator.start()
        let start = await node.produce([])
        await node.produce([chain.transactions["funding"]!, chain.transactions["self_stash"]!])
        await node.produce([chain.transactions["handshake"]!])
        await node.produce([])
        func id(_ name: String) -> String { (chain.transactions[name]!["verboseData"] as! [String: Any])["transactionId"] as! String }
        func outpoint(_ name: String) -> RpcOutpoint {
            let previous = (chain.transactions[name]!["inputs"] as! [[String: Any]])[0]["previousOutpoint"] as! [String: Any]
            return RpcOutpoint(transactionId: previous["transactionId"] as! String, index: UInt32(previous["index"] as! Int))
        }
        let client = KaspaRPCClient(url: node.url)
        let (stash, handshakeID) = (id("self_stash"), id("handshake"))
        let answers = try await Self.bounded(.seconds(60)) {
            try await client.withSession { session in
                [
                    try await session.spentCoins(acceptedAfter: start, transactions: [stash, handshakeID]),
                    try await session.spentCoins(acceptedAfter: start, transactions: [handshakeID]),
                    // The sink is two blue scores past the stash's block: a count of 1 leaves the two after it out.
                    try await session.spentCoins(acceptedAfter: start, minConfirmationCount: 1, transactions: [stash, handshakeID]),
                ]
            }
        }
        let (both, handshake, stopped) = try #require(answers.map { ($0[0], $0[1], $0[2]) })
        #expect(Set(both.keys) == [outpoint("self_stash"), outpoint("handshake")])
        #expect(Set(handshake.keys) == [outpoint("handshake")])
        #expect(Set(stopped.keys) == [outpoint("self_stash")])
        // The coin is what the stash made: its change, paying Alice.
        let change = (chain.transactions["self_stash"]!["outputs"] as! [[String: Any]])[Int(outpoint("handshake").index)]
        #expect(handshake.values.first?.amount == (change["value"] as? NSNumber)?.uint64Value)
        #expect(handshake.values.first?.address == chain.alice)
        await node.shutdown()
    }

    @Test("values go into requests through an encoder: a hash with quotes is asked for, not spliced into the JSON")
    func encodedRequests() async throws {
        let node = try await KaspaNodeSimulator.start()
        let client = KaspaRPCClient(url: node.url)
        let answer: String? = try await Self.bounded(.seconds(60)) {
            do {
                _ = try await client.withSession { try await $0.getBlock(hash: #"x","includeTransactions":true,"hash":"y"#, includeTransactions: false) }
                return "answered"
            } catch {
                return "\(error)"
            }
        }
        // The node read one well-formed request naming that odd hash, and knew no such block.
        #expect(answer == "\(KaspaRPCError.node(method: "getBlock", message: "block not found"))")
        await node.shutdown()
    }
}
