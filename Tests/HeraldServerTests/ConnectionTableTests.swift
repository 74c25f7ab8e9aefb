import NIOCore
import NIOEmbedded
import Testing

@testable import HeraldServer

/// Past the cap, the connection that has waited longest without a request in hand makes room;
/// when every connection is busy answering, the new one is refused.
@Suite("Connection cap")
struct ConnectionTableTests {
    func id(_ admission: ConnectionTable.Admission) -> Int? {
        if case .admitted(let id, _) = admission { id } else { nil }
    }

    func evicted(_ admission: ConnectionTable.Admission) -> (any Channel)? {
        if case .admitted(_, let evict) = admission { evict } else { nil }
    }

    @Test("the longest-waiting reading or idle connection makes room; busy ones are never taken; all busy: refused")
    func eviction() throws {
        let table = ConnectionTable(limits: ConnectionLimits(maximumConnections: 3))
        let channels = (0..<6).map { _ in EmbeddedChannel() }
        let a = try #require(id(table.admit(channels[0])))
        let b = try #require(id(table.admit(channels[1])))
        let c = try #require(id(table.admit(channels[2])))
        // a answers a request; b finished one and waits idle (since after a); c still reads its first.
        table.set(a, .answering)
        table.set(b, .idle)
        // Full: c has waited longest without a request in hand (since it opened).
        let d = table.admit(channels[3])
        #expect(evicted(d) === channels[2])
        #expect(table.open == 3)
        // Next: b (idle), never a (answering).
        let e = table.admit(channels[4])
        #expect(evicted(e) === channels[1])
        // a, d and e: d and e read their first requests; make them busy, and the next is refused.
        table.set(try #require(id(d)), .answering)
        table.set(try #require(id(e)), .answering)
        guard case .refused = table.admit(channels[5]) else {
            Issue.record("admitted past the cap with every connection busy")
            return
        }
        #expect(table.refused == 1 && table.evicted == 2)
        // One closes: room again, with nothing to evict.
        table.close(a)
        #expect(evicted(table.admit(channels[5])) == nil)
        _ = c
    }
}
