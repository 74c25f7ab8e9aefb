import Foundation
import HeraldAPNsCore
import HeraldAPNsSimulator
import HeraldHTTP2
import HeraldPushCore
import Logging
import NIOCore
import NIOHPACK
import NIOPosix
import Testing

/// Senders on the event loops (`herald send --repeat`): a task that prefers a loop runs there,
/// and the pool gives it a connection on that loop, so a push needs no hand-over between threads.
@Suite struct EventLoopAffinityTests {
    @Test("a task preferring an event loop's executor runs on that loop, also after awaiting an answer")
    func taskRunsOnItsLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let onLoop = await withTaskGroup(of: Bool.self) { tasks in
            for loop in loops {
                tasks.addTask(executorPreference: EventLoopTaskExecutor(loop)) {
                    let before = loop.inEventLoop
                    // An answer completed on the other loop: the task comes back to its own.
                    let other = loops.first { $0 !== loop }!
                    try? await other.scheduleTask(in: .milliseconds(1)) {}.futureResult.get()
                    return before && loop.inEventLoop
                }
            }
            return await tasks.reduce(true) { $0 && $1 }
        }
        #expect(onLoop)
        try await group.shutdownGracefully()
    }

    @Test("the pool leases a connection on the caller's own event loop when one has room")
    func poolPrefersTheCallersLoop() async throws {
        try await SimulatorFixture.with { fixture in
            let factory = try HTTP2ConnectionFactory(
                url: fixture.simulator.url(for: .production), trustRootsPEMFile: fixture.caPath, connectTimeout: .seconds(5),
                pingInterval: .seconds(60), pingTimeout: .seconds(10))
            let pool = HTTP2ConnectionPool(factory: factory, group: fixture.group, size: 4, logger: Logger(label: "test"))
            // Without a provider token the simulator answers 403, and keeps one stream a connection.
            let request = HTTP2Request(path: "/3/device/" + deviceToken(1), headers: HPACKHeaders(), body: ByteBuffer(string: "{}"))
            _ = try await pool.submit(request, deadline: .now() + .seconds(10)).get()
            for _ in 0..<1_000 where pool.snapshot.ready < 4 { try await Task.sleep(for: .milliseconds(10)) }
            try #require(pool.snapshot.ready == 4, "the pool's 4 connections never became ready")
            for loop in Array(fixture.group.makeIterator()) {
                let answeredOn = try await loop.submit {
                    (0..<2).map { _ in pool.submit(request, deadline: .now() + .seconds(10)) }
                }.get()
                for answer in answeredOn {
                    // The answer's future is the leased connection's: on the loop that asked.
                    #expect(answer.eventLoop === loop)
                    #expect(try await answer.get().status == 403)
                }
            }
            await pool.shutdown()
        }
    }
}
