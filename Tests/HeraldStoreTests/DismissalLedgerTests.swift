import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldPushCore
import HeraldStore
import HeraldTestSupport
import Testing

/// Read markers and the dismissals they arm, on every store: a replay changes nothing, one
/// dismissal per device and conversation per window (markers within it merge into the next),
/// a merge that lands while a push is being committed stays armed, and what rides along.
@Suite("Dismissal ledger", .serialized)
struct DismissalLedgerTests {
    static let t0 = Date(timeIntervalSince1970: 1_760_000_000)

    static func phones(_ store: any Store, _ count: Int) async throws -> [DeviceRecord] {
        try await store.register(
            (1...count).map {
                Registration(
                    app: "kasia", token: try APNsTokenRule().token(String(repeating: "0", count: 62) + String(format: "%02x", $0)),
                    attributes: DeviceAttributes(apnsEnvironment: .production), deviceID: "user-1", watchSet: .empty)
            }, now: t0)
    }

    static func marker(_ digest: String, upTo: String, issuedAt: Int64 = 1_760_000_000, to siblings: [DeviceRecord], conversation: String = "x") -> ReadMarker {
        ReadMarker(app: "kasia", digest: digest, conversation: conversation, upTo: upTo, issuedAt: issuedAt, siblings: siblings.map(\.rowID))
    }

    @Test("a marker arms each sibling's dismissal at once; a replay is refused; markers within the window merge into one due when it ends; an older marker changes nothing")
    func windowAndMerge() async throws {
        try await withEachStore { store, _ in
            let phones = try await Self.phones(store, 3)
            let siblings = Array(phones[1...])
            #expect(try await store.record(Self.marker("m1", upTo: "10", to: siblings), window: 10, now: Self.t0))
            #expect(try await !store.record(Self.marker("m1", upTo: "10", to: siblings), window: 10, now: Self.t0), "a replay")
            let due = try await store.dueDismissals(now: Self.t0, limit: 10)
            #expect(Set(due.map(\.deviceRowID)) == Set(siblings.map(\.rowID)) && due.allSatisfy { $0.upTo == "10" && $0.conversation == "x" })
            try await store.dismissalsSent(due, window: 10, now: Self.t0)
            #expect(try await store.dueDismissals(now: Self.t0.addingTimeInterval(60), limit: 10).isEmpty)
            #expect(try await store.nextDismissalDue() == nil)

            // Two markers 2 s and 3 s after the push: merged, due when the window ends, the latest position.
            for (i, upTo) in ["11", "12"].enumerated() {
                #expect(try await store.record(Self.marker("m\(i + 2)", upTo: upTo, to: siblings), window: 10, now: Self.t0.addingTimeInterval(Double(2 + i))))
            }
            #expect(try await store.dueDismissals(now: Self.t0.addingTimeInterval(9.9), limit: 10).isEmpty)
            #expect(try await store.nextDismissalDue() == Self.t0.addingTimeInterval(10))
            let merged = try await store.dueDismissals(now: Self.t0.addingTimeInterval(10), limit: 10)
            #expect(merged.count == 2 && merged.allSatisfy { $0.upTo == "12" })
            // A marker issued before the last one (a delayed request) does not take the position back.
            #expect(try await store.record(Self.marker("m4", upTo: "9", issuedAt: 1_759_999_990, to: siblings), window: 10, now: Self.t0.addingTimeInterval(10)))
            #expect(try await store.dueDismissals(now: Self.t0.addingTimeInterval(10), limit: 10).allSatisfy { $0.upTo == "12" })

            // A marker that merges while the push is being committed: the row stays armed for the next window.
            #expect(try await store.record(Self.marker("m5", upTo: "13", to: siblings), window: 10, now: Self.t0.addingTimeInterval(10)))
            try await store.dismissalsSent(merged, window: 10, now: Self.t0.addingTimeInterval(10))
            #expect(try await store.dueDismissals(now: Self.t0.addingTimeInterval(19), limit: 10).isEmpty)
            let next = try await store.dueDismissals(now: Self.t0.addingTimeInterval(20), limit: 10)
            #expect(next.count == 2 && next.allSatisfy { $0.upTo == "13" })
            try await store.dismissalsSent(next, window: 10, now: Self.t0.addingTimeInterval(20))

            // A marker a window after the last push is due at once.
            #expect(try await store.record(Self.marker("m6", upTo: "14", to: [phones[1]]), window: 10, now: Self.t0.addingTimeInterval(40)))
            #expect(try await store.dueDismissals(now: Self.t0.addingTimeInterval(40), limit: 10).map(\.upTo) == ["14"])
        }
    }

    @Test("what rides along: a device's dismissals of the last day, newest first, at most the limit; retention forgets old unarmed rows and expired digests, and a deleted device's")
    func rideAlongAndRetention() async throws {
        try await withEachStore { store, _ in
            let phones = try await Self.phones(store, 2)
            for i in 0..<5 {
                #expect(try await store.record(
                    Self.marker("r\(i)", upTo: "\(i)", to: [phones[1]], conversation: "c\(i)"), window: 10, now: Self.t0.addingTimeInterval(Double(i))))
            }
            let recent = try await store.recentDismissals(deviceRowIDs: [phones[0].rowID, phones[1].rowID], since: Self.t0.addingTimeInterval(1), limit: 3)
            #expect(recent.keys.sorted() == [phones[1].rowID])
            #expect(recent[phones[1].rowID]?.map(\.conversation) == ["c4", "c3", "c2"])
            try await store.dismissalsSent(try await store.dueDismissals(now: Self.t0.addingTimeInterval(5), limit: 10), window: 10, now: Self.t0.addingTimeInterval(5))
            // A day on: the rows marked before are gone, and the digests (a replay after them is a
            // stale marker, which the route refuses by its issued_at).
            let pruned = try await store.pruneDismissals(markedBefore: Self.t0.addingTimeInterval(3), now: Self.t0.addingTimeInterval(86_400))
            #expect(pruned == 5 + 3)
            #expect(try await store.recentDismissals(deviceRowIDs: [phones[1].rowID], since: .distantPast, limit: 32)[phones[1].rowID]?.count == 2)
            #expect(try await store.unregister(app: "kasia", token: phones[1].token))
            #expect(try await store.recentDismissals(deviceRowIDs: [phones[1].rowID], since: .distantPast, limit: 32).isEmpty)
        }
    }
}
