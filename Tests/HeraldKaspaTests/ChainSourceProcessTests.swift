import Foundation
import HeraldCore
import HeraldKaspa
import HeraldTestSupport
import KasiaProtocol
import KaspaNodeSimulator
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The SDK-made transactions as raw node JSON (what the simulator serves).
struct RawFixtures {
    let cases: [String: [String: Any]]
    /// The plain transfer that paid every coin the cases spend.
    let funding: [String: Any]
    let bulk: [[String: Any]]
    let alice: String
    let bob: String

    static func load() throws -> RawFixtures {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/kasia_transactions.json")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        var cases: [String: [String: Any]] = [:]
        for c in object["cases"] as! [[String: Any]] { cases[c["name"] as! String] = c["tx"] as? [String: Any] }
        let addresses = object["addresses"] as! [String: String]
        return RawFixtures(
            cases: cases, funding: object["funding"] as! [String: Any], bulk: object["bulk_messages"] as! [[String: Any]], alice: addresses["alice"]!,
            bob: addresses["bob"]!)
    }

    static func txid(_ tx: [String: Any]) -> String { (tx["verboseData"] as! [String: Any])["transactionId"] as! String }

    /// `getUtxoReturnAddress` answers naming Alice as the sender of every bulk message.
    var bulkSenders: [String: String] {
        Dictionary(uniqueKeysWithValues: bulk.map { (Self.txid($0), alice) })
    }
}

/// A fresh directory for one test's files; the test removes it.
func scratchDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-kaspa-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

/// Mallory's forgery, made with the official SDK (`Fixtures/make_forged_fixture.py`).
struct ForgedFixture {
    let forged: [String: Any]
    let alice: String
    let mallory: String
    let alias: String

    static func load() throws -> ForgedFixture {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/forged_sender.json")
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        let addresses = object["addresses"] as! [String: String]
        return ForgedFixture(
            forged: object["forged"] as! [String: Any], alice: addresses["alice"]!, mallory: addresses["mallory"]!, alias: object["alias"] as! String)
    }
}

/// `herald serve` following the node simulator, with its built-in APNs simulator.
struct FollowingHerald {
    let process: HeraldProcess
    let api: String
    let control: String
    let admin: String

    static func start(node: KaspaNodeSimulator, database: URL, environment extra: [String: String] = [:]) throws -> FollowingHerald {
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + database.path, "HERALD_HTTP_PORT": "0", "HERALD_KASPA_WRPC_URL": node.url,
            "HERALD_REGISTRATION_RATE": "0",
        ].merging(extra) { _, new in new })
        return FollowingHerald(process: serve.process, api: serve.api, control: serve.control, admin: serve.admin)
    }

    /// A first run on `node`: `follower` registers watching Alice, one of her messages is pushed,
    /// and Herald stops with the checkpoint stored in `database`.
    static func storeCheckpoint(
        node: KaspaNodeSimulator, database: URL, follower: String, fixtures: RawFixtures, environment: [String: String] = [:]
    ) async throws {
        let herald = try FollowingHerald.start(node: node, database: database, environment: environment)
        defer { herald.stop() }
        try await herald.register(follower, watched: [fixtures.alice])
        try await herald.waitConnected()
        await node.produce([fixtures.bulk[0]], senders: fixtures.bulkSenders)
        #expect(try await herald.pushes(follower, reaching: 1).count == 1)
    }

    func register(_ token: String, watched: [String], addresses: [String] = [], routes: [(String, [String])] = []) async throws {
        let routesJSON = routes.map { #"{"peer_address":"\#($0.0)","aliases":[\#($0.1.map { "\"\($0)\"" }.joined(separator: ","))]}"# }
        let body = #"{"device_token":"\#(token)","platform":"ios","watched_addresses":[\#(watched.map { "\"\($0)\"" }.joined(separator: ","))],"addresses":[\#(addresses.map { "\"\($0)\"" }.joined(separator: ","))],"contextual_routes":[\#(routesJSON.joined(separator: ","))]}"#
        let (status, data) = try await http("POST", api + "/v1/push/register", body)
        #expect(status == 200, "\(String(decoding: data, as: UTF8.self))")
    }

    /// Waits until the chain source is connected (60 s at most: a loaded machine is slow, a
    /// connected source answers at once).
    func waitConnected() async throws {
        let stats = try await waitForStats { $0["connected"] as? Bool == true }
        if stats["connected"] as? Bool != true { Issue.record("the chain source did not connect") }
    }

    /// Polls `/v1/stats` until the chain source's stats satisfy `done` (60 s at most); returns the last ones.
    @discardableResult
    func waitForStats(_ done: ([String: Any]) -> Bool) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + .seconds(60)
        var stats = try await kaspaStats()
        while !done(stats), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            stats = try await kaspaStats()
        }
        return stats
    }

    func kaspaStats() async throws -> [String: Any] {
        let (_, data) = try await http("GET", admin + "/v1/stats")
        return ((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["kaspa"] as? [String: Any]) ?? [:]
    }

    /// The simulator's pushes to `token`.
    func pushes(_ token: String) async throws -> [[String: Any]] {
        let (_, data) = try await http("GET", control + "/notifications?token=" + token)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
    }

    /// Waits until `token` has `count` pushes, then a little longer to catch any extra.
    func pushes(_ token: String, reaching count: Int, timeout: Duration = .seconds(60)) async throws -> [[String: Any]] {
        let started = ContinuousClock.now
        var list = try await pushes(token)
        while list.count < count, ContinuousClock.now - started < timeout {
            try await Task.sleep(for: .milliseconds(50))
            list = try await pushes(token)
        }
        try await Task.sleep(for: .milliseconds(500))
        return try await pushes(token)
    }

    func stop() {
        process.kill(SIGTERM)
    }
}

func deviceToken(_ n: Int) -> String {
    String(repeating: String(format: "%02x", n), count: 32)
}

@Suite("The Kaspa chain source: node simulator → herald serve → APNs simulator", .serialized)
struct ChainSourceProcessTests {
    @Test("handshake, message and payment arrive as the exact pushes of docs/kasia.md, routed by addresses and contextual routes")
    func exactPushesAndRouting() async throws {
        let fixtures = try RawFixtures.load()
        let node = try await KaspaNodeSimulator.start()
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try FollowingHerald.start(node: node, database: directory.appendingPathComponent("herald.sqlite"))
        defer { herald.stop() }
        let (alice, bob) = (fixtures.alice, fixtures.bob)
        let carol = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"
        try await herald.register(deviceToken(1), watched: [bob], addresses: [bob])                      // bob's phone
        try await herald.register(deviceToken(2), watched: [bob], addresses: [carol])                    // carol watches bob as a contact
        try await herald.register(deviceToken(3), watched: [alice], routes: [(alice, ["a1b2c3d4e5f6"])])  // follows alice, alias x
        try await herald.register(deviceToken(4), watched: [alice], routes: [(alice, ["ffffffffffff"])])  // follows alice, alias y
        try await herald.register(deviceToken(5), watched: [alice])                                      // follows alice, no routes
        try await herald.waitConnected()

        let handshake = fixtures.cases["handshake"]!, message = fixtures.cases["contextual_message"]!, payment = fixtures.cases["payment"]!
        let senders = [RawFixtures.txid(handshake): alice, RawFixtures.txid(message): alice, RawFixtures.txid(payment): alice]
        let time = node.blockTime.withLock { $0 }
        let block = await node.produce([handshake, message, payment], senders: senders)
        let daaScore = try #require(node.daaScore(ofBlock: block))

        let bobPushes = try await herald.pushes(deviceToken(1), reaching: 2)
        #expect(bobPushes.count == 2)
        func expected(_ kind: KasiaEvent.Kind, _ tx: [String: Any], recipient: String?, amount: UInt64? = nil) -> String {
            let event = KasiaEvent(
                kind: kind, txID: RawFixtures.txid(tx), sender: alice, recipient: recipient, payloadHex: tx["payload"] as? String,
                timestamp: Int64(time / 1000), daaScore: daaScore, amount: amount)
            return String(decoding: KasiaTemplate.render(event).payload, as: UTF8.self)
        }
        let byCollapse = Dictionary(uniqueKeysWithValues: bobPushes.map { ($0["collapse_id"] as? String ?? "", withoutSignature($0["payload"] as? String ?? "")) })
        #expect(byCollapse[RawFixtures.txid(handshake)] == expected(.handshake, handshake, recipient: bob))
        #expect(byCollapse[RawFixtures.txid(payment)] == expected(.payment, payment, recipient: bob, amount: 150_000_000))
        #expect(bobPushes.allSatisfy { ($0["payload"] as? String ?? "").utf8.count <= 4_096 })

        let followers = try await herald.pushes(deviceToken(3), reaching: 1)
        #expect(followers.map { ($0["payload"] as? String).map(withoutSignature) } == [expected(.contextualMessage, message, recipient: nil)])
        #expect(followers.first?["collapse_id"] as? String == RawFixtures.txid(message))
        #expect(try await herald.pushes(deviceToken(5), reaching: 1).count == 1)
        #expect(try await herald.pushes(deviceToken(2)).isEmpty, "a contact watcher with its own addresses gets no payment to bob")
        #expect(try await herald.pushes(deviceToken(4)).isEmpty, "a route for another alias gets no message")
        let stats = try await herald.kaspaStats()
        #expect(stats["transactions_classified"] as? Int == 3)
        #expect(stats["last_block"] as? String == block)
        #expect(stats["leader"] as? Bool == true && stats["connected"] as? Bool == true)
        let (_, metrics) = try await http("GET", herald.admin + "/metrics")
        let text = String(decoding: metrics, as: UTF8.self)
        #expect(text.contains("herald_kaspa_connected 1"))
        #expect(text.contains("herald_kaspa_transactions_classified 3"))
        await node.shutdown()
    }

    @Test("a forged sender: Mallory's transaction paying Alice is Mallory's message, never Alice's; with no known sender, nobody's")
    func forgedSender() async throws {
        let fixtures = try RawFixtures.load()
        let forgery = try ForgedFixture.load()
        let node = try await KaspaNodeSimulator.start()
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try FollowingHerald.start(node: node, database: directory.appendingPathComponent("herald.sqlite"))
        defer { herald.stop() }
        let (followsAlice, followsMallory) = (deviceToken(3), deviceToken(6))
        try await herald.register(followsAlice, watched: [forgery.alice], routes: [(forgery.alice, [forgery.alias])])
        try await herald.register(followsMallory, watched: [forgery.mallory])
        try await herald.waitConnected()

        // One of Alice's own messages (its only output pays Alice) with no sender the node can
        // name: not pushed as Alice's, or anyone's, and counted.
        await node.produce([fixtures.bulk[0]])
        let stats = try await herald.waitForStats { $0["unattributed_messages"] as? Int == 1 }
        #expect(stats["unattributed_messages"] as? Int == 1)

        // Mallory's forgery: her coin, one output paying Alice, Alice's alias in the payload.
        await node.produce([forgery.forged], senders: [RawFixtures.txid(forgery.forged): forgery.mallory])
        let mallorys = try await herald.pushes(followsMallory, reaching: 1)
        #expect(mallorys.count == 1)
        let payload = try JSONSerialization.jsonObject(with: Data((mallorys.first?["payload"] as? String ?? "").utf8)) as? [String: Any]
        #expect((payload?["kasia"] as? [String: Any])?["sender"] as? String == forgery.mallory)
        #expect(try await herald.pushes(followsAlice).isEmpty, "a message was pushed as Alice's that she never sent")
        await node.shutdown()
    }

    @Test("a checkpoint the node no longer knows: the gap is counted and the source follows from now, instead of retrying forever")
    func unknownCheckpoint() async throws {
        let fixtures = try RawFixtures.load()
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("herald.sqlite")
        let follower = deviceToken(9)
        let senders = fixtures.bulkSenders

        // A first node: a checkpoint is stored.
        let first = try await KaspaNodeSimulator.start()
        try await FollowingHerald.storeCheckpoint(node: first, database: database, follower: follower, fixtures: fixtures)
        await first.shutdown()

        // A node whose chain never had that block (a pruned or reorged-out checkpoint looks the same).
        let second = try await KaspaNodeSimulator.start()
        let herald = try FollowingHerald.start(node: second, database: database)
        defer { herald.stop() }
        try await herald.waitConnected()
        let stats = try await herald.waitForStats { $0["gaps"] as? Int == 1 }
        #expect(stats["gaps"] as? Int == 1)
        await second.produce([fixtures.bulk[1]], senders: senders)
        let pushes = try await herald.pushes(follower, reaching: 1)
        #expect(pushes.compactMap { $0["collapse_id"] as? String } == [RawFixtures.txid(fixtures.bulk[1])])
        let (_, metrics) = try await http("GET", herald.admin + "/metrics")
        #expect(String(decoding: metrics, as: UTF8.self).contains("herald_kaspa_gaps_total 1"))
        await second.shutdown()
    }

    @Test("a pruned checkpoint and pruned anchors: the source resumes from the node's pruning point, skipping by HERALD_KASPA_MAX_AGE, so recent messages are still pushed")
    func prunedCheckpointResumesFromMaximumAge() async throws {
        let fixtures = try RawFixtures.load()
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("herald.sqlite")
        let follower = deviceToken(10)
        let senders = fixtures.bulkSenders
        let node = try await KaspaNodeSimulator.start()
        let environment = ["HERALD_KASPA_MAX_AGE": "1h"]

        try await FollowingHerald.storeCheckpoint(node: node, database: database, follower: follower, fixtures: fixtures, environment: environment)

        // While Herald is down: one message two hours old, then three recent ones; then the node
        // prunes everything up to the two-hour-old block, the checkpoint with it. It answers one
        // chain block per call, so the resumed read must page.
        let now = node.blockTime.withLock { $0 }
        node.blockTime.withLock { $0 = now - 2 * 3_600_000 }
        await node.produce([fixtures.bulk[1]], senders: senders)
        node.blockTime.withLock { $0 = now - 600_000 }
        for tx in fixtures.bulk[2...4] { await node.produce([tx], senders: senders) }
        node.blockTime.withLock { $0 = now }
        node.prune(keepingLast: 4)
        node.setChainBatch(1)

        let herald = try FollowingHerald.start(node: node, database: database, environment: environment)
        defer { herald.stop() }
        try await herald.waitConnected()
        let recent = Set(fixtures.bulk[2...4].map(RawFixtures.txid))
        let pushes = try await herald.pushes(follower, reaching: 3)
        #expect(Set(pushes.compactMap { $0["collapse_id"] as? String }) == recent, "the recent messages since the lost checkpoint")
        #expect(pushes.count == 3)
        let stats = try await herald.kaspaStats()
        #expect(stats["gaps"] as? Int == 1)
        // And it goes on following.
        await node.produce([fixtures.bulk[5]], senders: senders)
        #expect(try await herald.pushes(follower, reaching: 4).count == 4)
        await node.shutdown()
    }

    @Test("a checkpoint reorged out while Herald was away: it resumes from the newest anchor the node still has, pushes what it missed, and nothing twice")
    func reorgedCheckpointResumesFromAnchor() async throws {
        let fixtures = try RawFixtures.load()
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("herald.sqlite")
        let follower = deviceToken(13)
        let senders = fixtures.bulkSenders
        let node = try await KaspaNodeSimulator.start()
        let now = node.blockTime.withLock { $0 }

        // A first run: three messages ten minutes of block time apart, each block kept as an anchor.
        var hashes: [String] = []
        do {
            let herald = try FollowingHerald.start(node: node, database: database)
            defer { herald.stop() }
            try await herald.register(follower, watched: [fixtures.alice])
            try await herald.waitConnected()
            for (i, minutes) in [30, 20, 10].enumerated() {
                node.blockTime.withLock { $0 = now - UInt64(minutes) * 60_000 }
                hashes.append(await node.produce([fixtures.bulk[i]], senders: senders))
                #expect(try await herald.pushes(follower, reaching: i + 1).count == i + 1)
            }
        }
        // While it is away the checkpoint (the third block) is reorged out, and a new message comes.
        node.blockTime.withLock { $0 = now - 5 * 60_000 }
        await node.reorgLastBlock()
        node.blockTime.withLock { $0 = now }
        await node.produce([fixtures.bulk[3]], senders: senders)

        // (Each run has its own APNs simulator: these are the second run's pushes.)
        let herald = try FollowingHerald.start(node: node, database: database)
        let pushes = try await herald.pushes(follower, reaching: 1)
        #expect(pushes.compactMap { $0["collapse_id"] as? String } == [RawFixtures.txid(fixtures.bulk[3])], "missed, or pushed twice")
        #expect(try await herald.kaspaStats()["gaps"] as? Int == 1)
        herald.stop()
        // It read the chain again from the second block, the newest anchor still on the chain.
        let log = herald.process.fullLog()
        #expect(log.contains("resume_from=\(hashes[1])"), "\(log.suffix(3_000))")
        await node.shutdown()
    }

    @Test("a block the node fails to give is asked again in place: no reconnect, nothing skipped; one it never gives is skipped and counted, and the source goes on")
    func blockFetchRetries() async throws {
        let fixtures = try RawFixtures.load()
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("herald.sqlite")
        let follower = deviceToken(14)
        let senders = fixtures.bulkSenders
        let node = try await KaspaNodeSimulator.start()
        try await FollowingHerald.storeCheckpoint(node: node, database: database, follower: follower, fixtures: fixtures)

        // Missed while away, so the gap fill fetches the blocks; the node fails the first three fetches.
        for tx in fixtures.bulk[1...2] { await node.produce([tx], senders: senders) }
        node.failNext("getBlock", count: 3)
        // (Each run has its own APNs simulator: these are this run's pushes.)
        var herald = try FollowingHerald.start(node: node, database: database)
        var pushes = try await herald.pushes(follower, reaching: 2)
        #expect(Set(pushes.compactMap { $0["collapse_id"] as? String }) == Set(fixtures.bulk[1...2].map(RawFixtures.txid)))
        #expect(pushes.count == 2)
        var stats = try await herald.kaspaStats()
        #expect(stats["reconnects"] as? Int == 0 && stats["skipped_blocks"] as? Int == 0 && stats["gaps"] as? Int == 0, "\(stats)")
        herald.stop()

        // The next time, the first block is never given (four refusals): it is skipped, the next is pushed.
        for tx in fixtures.bulk[3...4] { await node.produce([tx], senders: senders) }
        node.failNext("getBlock", count: 4)
        herald = try FollowingHerald.start(node: node, database: database)
        defer { herald.stop() }
        pushes = try await herald.pushes(follower, reaching: 1)
        #expect(pushes.compactMap { $0["collapse_id"] as? String } == [RawFixtures.txid(fixtures.bulk[4])])
        stats = try await herald.waitForStats { $0["skipped_blocks"] as? Int == 1 }
        #expect(stats["skipped_blocks"] as? Int == 1 && stats["reconnects"] as? Int == 0, "\(stats)")
        await node.shutdown()
    }

    @Test("after a restart the missed chain is read to the end, though the node answers it a batch at a time")
    func gapFillPages() async throws {
        let fixtures = try RawFixtures.load()
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("herald.sqlite")
        let follower = deviceToken(11)
        let senders = fixtures.bulkSenders
        let node = try await KaspaNodeSimulator.start()
        node.setChainBatch(2)

        try await FollowingHerald.storeCheckpoint(node: node, database: database, follower: follower, fixtures: fixtures)

        for tx in fixtures.bulk[1...7] { await node.produce([tx], senders: senders) }
        let herald = try FollowingHerald.start(node: node, database: database)
        defer { herald.stop() }
        let pushes = try await herald.pushes(follower, reaching: 7)
        #expect(Set(pushes.compactMap { $0["collapse_id"] as? String }) == Set(fixtures.bulk[1...7].map(RawFixtures.txid)))
        #expect(pushes.count == 7)
        #expect(try await herald.kaspaStats()["gaps"] as? Int == 0)
        await node.shutdown()
    }

    @Test("a gap fill the node fails for a moment is tried again after a reconnect: nothing skipped, no gap counted")
    func transientGapFillError() async throws {
        let fixtures = try RawFixtures.load()
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("herald.sqlite")
        let follower = deviceToken(12)
        let senders = fixtures.bulkSenders
        let node = try await KaspaNodeSimulator.start()
        try await FollowingHerald.storeCheckpoint(node: node, database: database, follower: follower, fixtures: fixtures)
        for tx in fixtures.bulk[1...3] { await node.produce([tx], senders: senders) }
        // The node fails the first two gap fills; it still has the checkpoint.
        node.failNext("getVirtualChainFromBlock", count: 2)
        let herald = try FollowingHerald.start(node: node, database: database)
        defer { herald.stop() }
        let pushes = try await herald.pushes(follower, reaching: 3)
        #expect(Set(pushes.compactMap { $0["collapse_id"] as? String }) == Set(fixtures.bulk[1...3].map(RawFixtures.txid)))
        #expect(try await herald.kaspaStats()["gaps"] as? Int == 0)
        await node.shutdown()
    }

    @Test("HERALD_KASPA_NETWORK: a node of another network is not followed; another network's addresses are refused at registration")
    func network() async throws {
        let fixtures = try RawFixtures.load()
        let node = try await KaspaNodeSimulator.start()  // a mainnet node
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let herald = try FollowingHerald.start(
            node: node, database: directory.appendingPathComponent("herald.sqlite"), environment: ["HERALD_KASPA_NETWORK": "testnet"])
        defer { herald.stop() }
        let testnet = try KaspaAddress(prefix: .testnet, version: .publicKey, payload: [UInt8](repeating: 7, count: 32)).string
        func register(_ body: String) async throws -> (Int, [String: Any]) {
            let (status, data) = try await http("POST", herald.api + "/v1/push/register", body)
            return (status, (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:])
        }
        var (status, answer) = try await register(#"{"device_token":"\#(deviceToken(1))","platform":"ios","watched_addresses":["\#(testnet)","\#(fixtures.alice)"]}"#)
        // A well-formed address of another network: refused on what it means.
        #expect(status == 422)
        #expect((answer["error"] as? [String: Any])?["field"] as? String == "watched_addresses[1]")
        (status, answer) = try await register(#"{"device_token":"\#(deviceToken(1))","platform":"ios","watched_addresses":["session:s"],"addresses":["\#(fixtures.bob)"]}"#)
        #expect((answer["error"] as? [String: Any])?["field"] as? String == "addresses[0]")
        (status, _) = try await register(#"{"device_token":"\#(deviceToken(1))","platform":"ios","watched_addresses":["\#(testnet)"]}"#)
        #expect(status == 200)

        // The source asks the node which network it serves, and does not follow a mainnet node.
        let kaspa = try await herald.waitForStats { ($0["reconnects"] as? Int ?? 0) >= 2 }
        #expect((kaspa["reconnects"] as? Int ?? 0) >= 2)
        #expect(kaspa["connected"] as? Bool == false)
        #expect(kaspa["last_block"] is NSNull || kaspa["last_block"] == nil)
        await node.shutdown()
    }

    @Test("restart with 50 missed, a dropped socket, a transaction in two parallel blocks, a reorg: every message pushed exactly once")
    func exactlyOnce() async throws {
        let fixtures = try RawFixtures.load()
        let node = try await KaspaNodeSimulator.start()
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("herald.sqlite")
        let follower = deviceToken(9)
        var senders = fixtures.bulkSenders

        var herald = try FollowingHerald.start(node: node, database: database)
        try await herald.register(follower, watched: [fixtures.alice])
        try await herald.waitConnected()
        await node.produce([fixtures.bulk[0]], senders: senders)
        let before = try await herald.pushes(follower, reaching: 1).compactMap { $0["collapse_id"] as? String }
        #expect(before == [RawFixtures.txid(fixtures.bulk[0])])

        // Herald stops; the node goes on with 50 Kasia transactions (the first of them already
        // pushed: the node accepts it again in a later block). Each new process has a new APNs
        // simulator, so it shows only what this process sent.
        herald.stop()
        for tx in fixtures.bulk { await node.produce([tx], senders: senders) }
        herald = try FollowingHerald.start(node: node, database: database)
        var pushes = try await herald.pushes(follower, reaching: 49)
        var ids = pushes.compactMap { $0["collapse_id"] as? String }
        #expect(ids.count == 49 && Set(ids).count == 49, "\(ids.count) pushes, \(Set(ids).count) distinct")
        #expect(Set(ids + before) == Set(fixtures.bulk.map(RawFixtures.txid)), "each of the 50 pushed exactly once across the restart")

        // The node drops the socket and produces while Herald reconnects: the gap is filled.
        let fresh = fixtures.cases["contextual_message"]!
        senders[RawFixtures.txid(fresh)] = fixtures.alice
        node.dropConnections()
        await node.produce([fresh], senders: senders)
        pushes = try await herald.pushes(follower, reaching: 50)
        ids = pushes.compactMap { $0["collapse_id"] as? String }
        #expect(ids.count == 50 && ids.filter { $0 == RawFixtures.txid(fresh) }.count == 1)
        try await herald.waitConnected()
        #expect(try await herald.kaspaStats()["reconnects"] as? Int ?? 0 >= 1)

        // One transaction in two parallel blocks, then a reorg that re-accepts it: one push.
        let twice = fixtures.cases["long_message"]!
        senders[RawFixtures.txid(twice)] = fixtures.alice
        await node.produce([twice], parallel: [[twice]], senders: senders)
        await node.reorgLastBlock()
        await node.produce([], senders: senders)
        pushes = try await herald.pushes(follower, reaching: 51)
        ids = pushes.compactMap { $0["collapse_id"] as? String }
        #expect(ids.count == 51, "\(ids.count) pushes")
        #expect(ids.filter { $0 == RawFixtures.txid(twice) }.count == 1)
        // Over the inline limit: the push carries no payload, and still fits.
        let long = try #require(pushes.first { $0["collapse_id"] as? String == RawFixtures.txid(twice) })
        let payload = try JSONSerialization.jsonObject(with: Data((long["payload"] as! String).utf8)) as! [String: Any]
        #expect((payload["kasia"] as! [String: Any])["payload"] is NSNull)

        // Older than HERALD_KASPA_MAX_AGE (24 h): a payment to alice (the follower watches her and
        // registered no own addresses, so it would hear it) is processed, and not pushed.
        let stale = fixtures.cases["payment_kachat_pay"]!
        senders[RawFixtures.txid(stale)] = fixtures.bob
        let now = node.blockTime.withLock { $0 }
        node.blockTime.withLock { $0 = now - 25 * 3_600_000 }
        let staleBlock = await node.produce([stale], senders: senders)
        node.blockTime.withLock { $0 = now }
        let stats = try await herald.waitForStats { $0["last_block"] as? String == staleBlock }
        #expect(stats["last_block"] as? String == staleBlock)
        try await Task.sleep(for: .milliseconds(500))
        #expect(try await herald.pushes(follower).count == 51, "a 25-hour-old payment was pushed")
        herald.stop()
        await node.shutdown()
    }
}
