import Foundation
import HeraldTestSupport
import KaspaNodeSimulator
import Testing

/// Several `herald serve` processes on one PostgreSQL: one follows the chain at a time, another
/// takes over when it dies (runs when `HERALD_TEST_POSTGRES_URL` is set).
@Suite("Chain-source failover on PostgreSQL", .serialized, .enabled(if: TestPostgres.serverURL != nil))
struct ChainSourceFailoverTests {
    @Test("3 instances: one leader; SIGKILL it and another takes over; no txid pushed twice")
    func failover() async throws {
        let fixtures = try RawFixtures.load()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-failover-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await TestPostgres.withDatabase(serverURL: TestPostgres.serverURL!) { database in
            let node = try await KaspaNodeSimulator.start()
            let mock = try MockAPNsProcess(directory: directory, topic: "com.example.failover")
            defer { mock.process.kill(SIGTERM) }
            var env = mock.serveEnvironment
            env.merge([
                "HERALD_DATABASE_URL": database, "HERALD_HTTP_PORT": "0", "HERALD_KASPA_WRPC_URL": node.url,
                "HERALD_REGISTRATION_RATE": "0", "HERALD_SIGNING_KEY_PATH": try signingKeyFile(in: directory),
            ]) { _, new in new }
            let instances = try (0..<3).map { _ in try HeraldProcess(["serve"], environment: env) }
            defer { for instance in instances where instance.process.isRunning { instance.kill(SIGKILL) } }
            let ready = try instances.map { try $0.ready() }
            let apis = ready.map(\.api)
            let follower = deviceToken(7)
            let (status, _) = try await http(
                "POST", apis[1] + "/v1/push/register",
                #"{"device_token":"\#(follower)","platform":"ios","watched_addresses":["\#(fixtures.alice)"]}"#)
            #expect(status == 200)

            func leaders(among indices: [Int]) async throws -> [Int] {
                var found: [Int] = []
                for i in indices {
                    let (_, data) = try await http("GET", ready[i].admin + "/v1/stats")
                    let kaspa = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["kaspa"] as? [String: Any]
                    if kaspa?["leader"] as? Bool == true, kaspa?["connected"] as? Bool == true { found.append(i) }
                }
                return found
            }
            func waitForLeader(among indices: [Int]) async throws -> Int? {
                for _ in 0..<300 {
                    let found = try await leaders(among: indices)
                    #expect(found.count <= 1, "two leaders at once: \(found)")
                    if let leader = found.first { return leader }
                    try await Task.sleep(for: .milliseconds(50))
                }
                return nil
            }
            func pushedIDs(reaching count: Int) async throws -> [String] {
                var ids: [String] = []
                for _ in 0..<400 {
                    ids = try await mock.notifications(token: follower).compactMap { $0["collapse_id"] as? String }
                    if ids.count >= count { break }
                    try await Task.sleep(for: .milliseconds(50))
                }
                return ids
            }

            var senders: [String: String] = [:]
            for tx in fixtures.bulk { senders[RawFixtures.txid(tx)] = fixtures.alice }
            let leader = try #require(try await waitForLeader(among: [0, 1, 2]))
            for tx in fixtures.bulk[0..<10] { await node.produce([tx], senders: senders) }
            #expect(try await pushedIDs(reaching: 10).count == 10)
            try await Task.sleep(for: .seconds(1))  // the sends are recorded before the kill

            // The leader dies; the node goes on meanwhile.
            instances[leader].kill(SIGKILL)
            for tx in fixtures.bulk[10..<20] { await node.produce([tx], senders: senders) }
            let survivors = [0, 1, 2].filter { $0 != leader }
            let successor = try #require(try await waitForLeader(among: survivors), "no instance took over")

            let ids = try await pushedIDs(reaching: 20)
            try await Task.sleep(for: .seconds(1))
            let final = try await mock.notifications(token: follower).compactMap { $0["collapse_id"] as? String }
            #expect(final.count == 20, "\(final.count) pushes for 20 transactions")
            #expect(Set(final) == Set(fixtures.bulk[0..<20].map(RawFixtures.txid)))
            print("failover: instance \(leader) killed, instance \(successor) followed; \(ids.count) pushes, \(Set(final).count) distinct")
            for i in survivors {
                instances[i].kill(SIGTERM)
                #expect(instances[i].exitStatus == 0)
            }
            await node.shutdown()
        }
    }
}
