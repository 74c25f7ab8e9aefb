import Foundation
import HeraldAPNsCore
import HeraldAPNsSimulator
import HeraldHTTP2
import Logging
import NIOCore
import NIOHPACK
import Testing

@testable import HeraldAPNs

/// A batch in hand (an outbox lane's flight) goes to as few connections as its size needs, so its
/// streams share socket writes and their answers come back in shared reads.
@Suite struct PoolBatchTests {
    @Test("a small batch goes to one connection; a large one fills each connection up to an even share")
    func batchFillsOneConnectionFirst() async throws {
        try await SimulatorFixture.with { f in
            let factory = try HTTP2ConnectionFactory(
                url: f.simulator.url(for: .production), trustRootsPEMFile: f.caPath, connectTimeout: .seconds(5),
                pingInterval: .seconds(60), pingTimeout: .seconds(10))
            let pool = HTTP2ConnectionPool(factory: factory, group: f.group, size: 4, logger: Logger(label: "test"))
            let token = await APNsProviderTokenSource(key: f.key).currentToken()
            func requests(_ count: Int, from first: Int) -> [HTTP2Request] {
                (first..<first + count).map { i in
                    APNsClient.makeRequest(alert(deviceToken(i)), apnsID: UUID().uuidString.lowercased(), authorization: token.authorizationHeader)
                }
            }
            // Every connection open and past its first valid token (APNs allows one stream before).
            for round in 0..<100 {
                let snapshot = pool.snapshot
                if snapshot.ready == 4, snapshot.maxStreams.allSatisfy({ $0 > 100 }) { break }
                // One at a time, each on the least loaded connection.
                let answers = requests(8, from: round * 8).map { pool.submit($0, deadline: .now() + .seconds(10)) }
                for answer in answers { _ = try await answer.get() }
                try await Task.sleep(for: .milliseconds(10))
            }
            try #require(pool.snapshot.ready == 4 && pool.snapshot.maxStreams.allSatisfy { $0 > 100 }, "the pool never had 4 open connections")
            // Answers held for ten minutes, past any deadline here: the streams stay in flight
            // while the pool is looked at, however slow the machine, and the pool's shutdown ends them.
            try f.simulator.inject(SimulatorFault(kind: .delay, delayMs: 600_000))
            let small = pool.submit(requests(10, from: 10_000), deadline: .now() + .seconds(600))
            #expect(pool.snapshot.inFlight.sorted() == [0, 0, 0, 10])
            // 200 over 4 connections: a share of 50 each, the least loaded filled first.
            let large = pool.submit(requests(200, from: 20_000), deadline: .now() + .seconds(600))
            #expect(pool.snapshot.inFlight.sorted() == [50, 50, 50, 60])
            await pool.shutdown()
            for answer in small + large { _ = try? await answer.get() }
        }
    }
}
