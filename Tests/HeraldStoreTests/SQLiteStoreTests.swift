import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldCore
import HeraldFCM
import HeraldFCMCore
import HeraldPushCore
import HeraldStore
import HeraldTestSupport
import HeraldWebPushCore
import KasiaProtocol
import Synchronization
import Testing

private func address(_ byte: UInt8) -> KaspaAddress {
    try! KaspaAddress(prefix: .mainnet, version: .publicKey, payload: [UInt8](repeating: byte, count: 32))
}

private func token(_ i: Int) -> DeviceToken {
    let hex = String(i, radix: 16)
    return try! APNsTokenRule().token(String(repeating: "0", count: 64 - hex.count) + hex)
}

private func registration(_ i: Int, app: String = "kasia", watching keys: [WatchKey], own: [KaspaAddress] = [],
                          routes: [ContextualRoute] = []) throws -> Registration {
    Registration(app: app, token: token(i), attributes: DeviceAttributes(apnsEnvironment: .sandbox), deviceID: "device-\(i)",
                 watchSet: try WatchSet(watched: keys, own: own, routes: routes))
}

private let t0 = Date(timeIntervalSince1970: 1_760_000_000)
private let push = RenderedPush(pushType: .alert, priority: .immediate, collapseID: "c", payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8))

private func event(_ id: String, rows: [Int64], dedupe: String? = nil, expires: Date = t0.addingTimeInterval(86_400)) -> NewEvent {
    NewEvent(id: id, app: "kasia", template: "custom", push: push, expiresAt: expires, deviceRowIDs: rows, dedupeKey: dedupe)
}

@Suite("Store: registrations (SQLite, and PostgreSQL when configured)")
struct StoreRegistrationTests {
    @Test("a bulk registration stores every device and its watch set; a repeated token ends with its last watch set")
    func bulk() async throws {
        try await withEachStore { store, _ in
            let records = try await store.register([
                try registration(1, watching: [.session("a")]), try registration(2, app: "other", watching: [.session("b")]),
                try registration(1, watching: [.session("c")]),
            ], now: t0)
            #expect(records.map(\.token) == [token(1).value, token(2).value, token(1).value])
            #expect(records[0].rowID == records[2].rowID)
            #expect(try await store.status(app: "kasia", token: token(1).value, now: t0)?.1.watched == [.session("c")])
            #expect(try await store.devices(app: "other", watching: "session:b").map(\.token) == [token(2).value])
            #expect(try await store.stats().devices == ["kasia": ["ios": 1], "other": ["ios": 1]])
        }
    }

    @Test("devices are counted per app")
    func deviceCount() async throws {
        try await withEachStore { store, _ in
            for i in 1...3 { _ = try await store.register(try registration(i, watching: []), now: t0) }
            _ = try await store.register(try registration(4, app: "other", watching: []), now: t0)
            #expect(try await store.deviceCount(app: "kasia") == 3)
            #expect(try await store.deviceCount(app: "other") == 1)
            #expect(try await store.deviceCount(app: "none") == 0)
        }
    }

    @Test("register, status, re-register replaces the watch set, update, unregister")
    func lifecycle() async throws {
        try await withEachStore { store, _ in
            let d = try await store.register(try registration(1, watching: [.kaspaAddress(address(1)), .kaspaAddress(address(2))]), now: t0)
            #expect(d.token == token(1).value && d.deviceID == "device-1" && d.attributes.apnsEnvironment == .sandbox)
            var status = try #require(try await store.status(app: "kasia", token: token(1).value, now: t0.addingTimeInterval(5)))
            #expect(status.1.watched == [.kaspaAddress(address(1)), .kaspaAddress(address(2))])
            #expect(status.0.lastSeen == t0.addingTimeInterval(5))

            let again = try await store.register(try registration(1, watching: [.kaspaAddress(address(3))]), now: t0.addingTimeInterval(10))
            #expect(again.rowID == d.rowID && again.createdAt == t0 && again.updatedAt == t0.addingTimeInterval(10))
            status = try #require(try await store.status(app: "kasia", token: token(1).value, now: t0))
            #expect(status.1.watched == [.kaspaAddress(address(3))])

            #expect(try await store.updateWatchSet(app: "kasia", token: token(1).value, watchSet: try WatchSet(watched: [WatchKey.session("s")]), now: t0))
            #expect(try await store.updateWatchSet(app: "kasia", token: token(2).value, watchSet: .empty, now: t0) == false)
            #expect(try await store.status(app: "kasia", token: token(1).value, now: t0)?.1.watched == [.session("s")])

            #expect(try await store.unregister(app: "kasia", token: token(1).value))
            #expect(try await store.unregister(app: "kasia", token: token(1).value) == false)
            #expect(try await store.status(app: "kasia", token: token(1).value, now: t0) == nil)
            #expect(try await store.devices(app: "kasia", watching: WatchKey.session("s").description).isEmpty)
        }
    }

    @Test("routing lookups: by watch key, own address and route peer; per app")
    func lookups() async throws {
        try await withEachStore { store, _ in
            let a = address(0xA), b = address(0xB)
            _ = try await store.register(try registration(1, watching: [.kaspaAddress(a)]), now: t0)
            _ = try await store.register(try registration(2, watching: [], own: [a]), now: t0)
            _ = try await store.register(try registration(3, watching: [], routes: [ContextualRoute(peer: a, aliases: ["x", "y"])]), now: t0)
            _ = try await store.register(try registration(4, app: "other", watching: [.kaspaAddress(a)]), now: t0)
            _ = try await store.register(try registration(5, watching: [.kaspaAddress(b)]), now: t0)
            let found = try await store.devices(app: "kasia", watching: a.string)
            #expect(found.map(\.token) == [token(1).value, token(2).value, token(3).value])
            // A batch's keys in one lookup: the same devices per key.
            let each = try await store.devices(app: "kasia", watchingEach: [a.string, b.string, "session:none", a.string])
            #expect(each.count == 3 && each["session:none"] == [])
            #expect(each[a.string]?.map(\.token) == found.map(\.token) && each[b.string]?.map(\.token) == [token(5).value])
            let sets = try await store.watchSets(rowIDs: found.map(\.rowID))
            #expect(sets[found[1].rowID]?.own == [a])
            #expect(sets[found[2].rowID]?.routes[a] == ["x", "y"])
            #expect(try await store.devices(app: "kasia", tokens: [token(5).value, token(4).value, "ff"]).map(\.token) == [token(5).value])
            #expect(try await store.devices(app: "kasia", deviceIDs: ["device-2", "device-4", "nope"]).map(\.token) == [token(2).value])
            // One value (a lookup of its own), and the other app's device under the same token is not this app's.
            #expect(try await store.devices(app: "kasia", tokens: [token(5).value]).map(\.token) == [token(5).value])
            #expect(try await store.devices(app: "kasia", tokens: [token(4).value]).isEmpty)
            #expect(try await store.devices(app: "kasia", deviceIDs: ["device-3"]).map(\.token) == [token(3).value])
            // A read after a commit sees it, on connections that read before it.
            _ = try await store.register(try registration(6, watching: [.kaspaAddress(b)]), now: t0)
            #expect(try await store.devices(app: "kasia", watching: b.string).map(\.token) == [token(5).value, token(6).value])
            #expect(try await store.devices(app: "kasia", tokens: [token(6).value]).map(\.deviceID) == ["device-6"])
            #expect(try await store.unregister(app: "kasia", token: token(5).value))
            #expect(try await store.devices(app: "kasia", watching: b.string).map(\.token) == [token(6).value])
            #expect(try await store.devices(app: "kasia", tokens: [token(5).value]).isEmpty)
        }
    }
}

@Suite("Store: events and the outbox (SQLite, and PostgreSQL when configured)")
struct StoreOutboxTests {
    @Test("enqueue is durable across reopening, dedupes, and commits the checkpoint with its events")
    func enqueueDurable() async throws {
        try await withEachStore { store, reopen in
            let d1 = try await store.register(try registration(1, watching: []), now: t0)
            let d2 = try await store.register(try registration(2, watching: []), now: t0)
            let checkpoint = ChainCheckpoint(source: "kaspa", blockHash: "abc", daaScore: 42)
            let created = try await store.enqueue(
                [event("e1", rows: [d1.rowID, d2.rowID, d1.rowID], dedupe: "tx1")], checkpoint: checkpoint, now: t0)
            #expect(created == ["e1": 2])
            #expect(try await store.enqueue([event("e2", rows: [d1.rowID], dedupe: "tx1")], checkpoint: nil, now: t0) == [:])
            // Within one commit too: the first of a key is kept, a repeat is skipped, events without a key are not.
            #expect(try await store.enqueue(
                [event("e3", rows: [d2.rowID], dedupe: "tx2"), event("e4", rows: [d1.rowID], dedupe: "tx2"),
                 event("e5", rows: [d1.rowID]), event("e6", rows: [d2.rowID])], checkpoint: nil, now: t0) == ["e3": 1, "e5": 1, "e6": 1])

            let reopened = try await reopen()
            #expect(try await reopened.checkpoint(source: "kaspa") == checkpoint)
            #expect(try await reopened.stats().deliveries[.pending] == 5)
        }
    }

    @Test("a dedupe key holds across a restart until retention deletes its event; a commit that fails holds none")
    func dedupeKeyLifetime() async throws {
        try await withEachStore { first, reopen in
            let d1 = try await first.register(try registration(1, watching: []), now: t0)
            #expect(try await first.enqueue([event("e1", rows: [d1.rowID], dedupe: "k1")], checkpoint: nil, now: t0) == ["e1": 1])
            // No deliveries: nothing keeps it from retention.
            #expect(try await first.enqueue([event("e2", rows: [], dedupe: "k2")], checkpoint: nil, now: t0) == ["e2": 0])
            // A batch whose commit fails (an event id used twice) inserts nothing, and its key stays free.
            await #expect(throws: (any Error).self) {
                try await first.enqueue([event("e3", rows: [d1.rowID], dedupe: "k3"), event("e3", rows: [d1.rowID])], checkpoint: nil, now: t0)
            }

            // A restarted process (the first is not used again: one server per SQLite file).
            let store = try await reopen()
            #expect(try await store.enqueue([event("r1", rows: [d1.rowID], dedupe: "k1")], checkpoint: nil, now: t0) == [:])
            #expect(try await store.enqueue([event("r2", rows: [d1.rowID], dedupe: "k2")], checkpoint: nil, now: t0) == [:])
            #expect(try await store.enqueue([event("r3", rows: [d1.rowID], dedupe: "k3")], checkpoint: nil, now: t0) == ["r3": 1])
            // Retention deletes e2 (e1 and r3 wait for their deliveries): k2 is free again, k1 and k3 are not.
            let batch = try await store.pruneFinished(createdBefore: t0.addingTimeInterval(1), after: nil, limit: 100)
            #expect(batch.events == 1)
            #expect(try await store.enqueue(
                [event("r4", rows: [d1.rowID], dedupe: "k2"), event("r5", rows: [d1.rowID], dedupe: "k1"),
                 event("r6", rows: [d1.rowID], dedupe: "k3")], checkpoint: nil, now: t0.addingTimeInterval(2)) == ["r4": 1])
            let again = try await reopen()
            #expect(try await again.enqueue([event("r7", rows: [d1.rowID], dedupe: "k2")], checkpoint: nil, now: t0) == [:])
            #expect(try await again.stats().deliveries[.pending] == 3)
        }
    }

    @Test("chain anchors: newest first, per source, kept across reopening, those older than the cut forgotten")
    func chainAnchors() async throws {
        try await withEachStore { store, reopen in
            func anchor(_ hash: String, _ minutes: Double, source: String = "kaspa") -> ChainAnchor {
                ChainAnchor(source: source, blockHash: hash, daaScore: UInt64(minutes * 600), time: t0.addingTimeInterval(minutes * 60))
            }
            try await store.addAnchor(anchor("a", 0), keepingAfter: t0.addingTimeInterval(-3_600))
            try await store.addAnchor(anchor("b", 5), keepingAfter: t0.addingTimeInterval(-3_600))
            try await store.addAnchor(anchor("x", 5, source: "other"), keepingAfter: t0.addingTimeInterval(-3_600))
            try await store.addAnchor(anchor("b", 5), keepingAfter: t0.addingTimeInterval(-3_600))  // once only
            #expect(try await store.anchors(source: "kaspa") == [anchor("b", 5), anchor("a", 0)])
            // The next one past the maximum age drops the oldest.
            try await store.addAnchor(anchor("c", 70), keepingAfter: t0.addingTimeInterval(60))
            let reopened = try await reopen()
            #expect(try await reopened.anchors(source: "kaspa") == [anchor("c", 70), anchor("b", 5)])
            #expect(try await reopened.anchors(source: "other") == [anchor("x", 5, source: "other")])
        }
    }

    @Test("every field of an event comes back in its deliveries' claims, each event's own when one enqueue writes several")
    func enqueueKeepsEveryField() async throws {
        try await withEachStore { store, _ in
            let d1 = try await store.register(try registration(1, watching: []), now: t0)
            let d2 = try await store.register(try registration(2, watching: []), now: t0)
            let silent = RenderedPush(
                pushType: .background, priority: .considerate, collapseID: nil,
                payload: Array(#"{"aps":{"content-available":1},"k":"ü"}"#.utf8), fcmData: ["kind": "sync", "n": "2"])
            let expires = t0.addingTimeInterval(3_600)
            var loud = event("loud", rows: [d1.rowID, d2.rowID])
            loud.requestID = "publish-request-7"
            loud.template = "kasia.payment"
            let created = try await store.enqueue(
                [loud,
                 NewEvent(id: "silent", app: "kasia", template: "custom", push: silent, expiresAt: expires, deviceRowIDs: [d2.rowID], dedupeKey: "k1")],
                checkpoint: nil, now: t0)
            #expect(created == ["loud": 2, "silent": 1])
            let claimed = try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0, lease: .seconds(30))
            #expect(claimed.count == 3)
            for delivery in claimed {
                let (expected, expiry) = delivery.eventID == "silent" ? (silent, expires) : (push, t0.addingTimeInterval(86_400))
                #expect(delivery.push == expected)
                #expect(delivery.expiresAt == expiry && delivery.acceptedAt == t0 && delivery.attempt == 1)
                // The request that made the event, for whichever instance sends it.
                #expect(delivery.requestID == (delivery.eventID == "loud" ? "publish-request-7" : nil))
                // And its template, for the sealed alert a template may have.
                #expect(delivery.template == (delivery.eventID == "loud" ? "kasia.payment" : "custom"))
            }
            #expect(Set(claimed.map { "\($0.eventID) \($0.device.rowID)" }) == ["loud \(d1.rowID)", "loud \(d2.rowID)", "silent \(d2.rowID)"])
            #expect(Set(claimed.map(\.apnsID)).count == 3)
        }
    }

    @Test("a device removed between routing and commit (its token died, it unregistered) gets no delivery, and the event goes to the others instead of failing")
    func deviceGoneSinceRouting() async throws {
        try await withEachStore { store, _ in
            let phones = try await store.register((1...3).map { try registration($0, watching: []) }, now: t0)
            var routed = event("e1", rows: phones.map(\.rowID))
            routed.devices = phones  // as the publisher read them, before the removal
            #expect(try await store.unregister(app: "kasia", token: phones[1].token))
            let result = try await store.enqueue([routed], checkpoint: nil, now: t0, claim: nil)
            #expect(result.created == ["e1": 2])
            var claimed: [ClaimedDelivery] = []
            for platform in [Platform.ios] { claimed += try await store.claimDue(app: "kasia", platform: platform, limit: 10, now: t0, lease: .seconds(30)) }
            #expect(Set(claimed.map(\.device.token)) == [phones[0].token, phones[2].token])
        }
        // SQLite's enqueue that leases at once skips it too.
        try await withStore { store, _ in
            let phones = try await store.register((1...3).map { try registration($0, watching: []) }, now: t0)
            var routed = event("e1", rows: phones.map(\.rowID))
            routed.devices = phones
            #expect(try await store.unregister(app: "kasia", token: phones[0].token))
            let result = try await store.enqueue(
                [routed], checkpoint: nil, now: t0, claim: DirectClaim(lanes: [LaneKey(app: "kasia", platform: .ios): 1], lease: .seconds(30)))
            #expect(result.created == ["e1": 2])
            #expect(result.claimed.map(\.device.token) == [phones[1].token])
        }
    }

    @Test("SQLite: an enqueue leases deliveries to the waiting lanes it names, up to their count; the rest stay pending for their lanes; a lapsed lease is claimed again with the same apns-id")
    func directClaim() async throws {
        try await withStore { store, _ in
            let phones = try await store.register((1...3).map { try registration($0, watching: []) }, now: t0)
            let android = try await store.register(
                [Registration(
                    app: "kasia", token: try FCMTokenRule().token("fcm-direct:" + String(repeating: "K", count: 140)),
                    attributes: DeviceAttributes(apnsEnvironment: .production), deviceID: nil, watchSet: .empty)], now: t0)[0]
            let ios = LaneKey(app: "kasia", platform: .ios)
            let result = try await store.enqueue(
                [event("e1", rows: phones.map(\.rowID) + [android.rowID])], checkpoint: nil, now: t0,
                claim: DirectClaim(lanes: [ios: 2], lease: .seconds(30)))
            #expect(result.created == ["e1": 4])
            #expect(result.claimed.map(\.device.token) == phones[..<2].map(\.token))
            #expect(result.claimed.allSatisfy { $0.attempt == 1 && $0.push == push && $0.eventID == "e1" && $0.expiresAt == t0.addingTimeInterval(86_400) })
            #expect(result.pending == [ios, LaneKey(app: "kasia", platform: .android)])
            // The leased ones are not claimed again while their lease runs; the others are.
            let rest = try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0, lease: .seconds(30))
            #expect(rest.map(\.device.token) == [phones[2].token] && rest[0].attempt == 1)
            #expect(try await store.claimDue(app: "kasia", platform: .android, limit: 10, now: t0, lease: .seconds(30)).map(\.device.rowID) == [android.rowID])
            let lapsed = try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0.addingTimeInterval(31), lease: .seconds(30))
            #expect(Set(lapsed.map(\.id)) == Set(result.claimed.map(\.id) + [rest[0].id]))
            for first in result.claimed {
                let again = try #require(lapsed.first { $0.id == first.id })
                #expect(again.attempt == 2 && again.apnsID == first.apnsID && again.device == first.device)
            }
        }
    }

    @Test("a batch that cannot commit (an event id twice) writes nothing")
    func allOrNothing() async throws {
        try await withEachStore { store, _ in
            let d1 = try await store.register(try registration(1, watching: []), now: t0)
            await #expect(throws: (any Error).self) {
                try await store.enqueue([event("ok", rows: [d1.rowID]), event("bad", rows: [d1.rowID]), event("bad", rows: [d1.rowID])], checkpoint: nil, now: t0)
            }
            #expect(try await store.stats().deliveries.isEmpty)
            #expect(try await store.enqueue([event("ok", rows: [d1.rowID])], checkpoint: nil, now: t0) == ["ok": 1])
        }
    }

    @Test("concurrent enqueues commit together; one caller's bad batch fails only that caller, and holds no dedupe key")
    func groupCommit() async throws {
        try await withEachStore { store, _ in
            let d1 = try await store.register(try registration(1, watching: []), now: t0)
            let results = await withTaskGroup(of: (Int, Bool).self) { group in
                for i in 0..<50 {
                    group.addTask {
                        // Caller 17's batch cannot commit: its event id twice. The others' keys,
                        // claimed in the failed group's transaction too, must be free for their retries.
                        let batch = [event("e\(i)", rows: [d1.rowID], dedupe: "k\(i)")] + (i == 17 ? [event("e\(i)", rows: [d1.rowID])] : [])
                        let ok = (try? await store.enqueue(batch, checkpoint: nil, now: t0)) == ["e\(i)": 1]
                        return (i, ok)
                    }
                }
                var all: [Int: Bool] = [:]
                for await (i, ok) in group { all[i] = ok }
                return all
            }
            #expect(results.filter { !$0.value }.map(\.key) == [17])
            #expect(try await store.stats().deliveries[.pending] == 49)
            #expect(try await store.enqueue([event("again", rows: [d1.rowID], dedupe: "k17"), event("repeat", rows: [d1.rowID], dedupe: "k3")],
                                            checkpoint: nil, now: t0) == ["again": 1])
        }
    }

    @Test("claims lease deliveries; an expired lease (a crashed sender) makes them due again with the same apns-id")
    func claimAndLease() async throws {
        try await withEachStore { store, _ in
            let rows = try await (1...3).asyncMap { try await store.register(try registration($0, watching: []), now: t0).rowID }
            _ = try await store.enqueue([event("e", rows: rows)], checkpoint: nil, now: t0)
            let first = try await store.claimDue(app: "kasia", platform: .ios, limit: 2, now: t0, lease: .seconds(30))
            #expect(first.count == 2 && first.allSatisfy { $0.attempt == 1 && $0.push == push })
            let second = try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0.addingTimeInterval(1), lease: .seconds(30))
            #expect(second.count == 1)
            #expect(try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0.addingTimeInterval(2), lease: .seconds(30)).isEmpty)
            // The sender died: after the lease, the same deliveries come back, attempt 2, same apns-id.
            let again = try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0.addingTimeInterval(30.5), lease: .seconds(30))
            #expect(Set(again.map(\.id)) == Set(first.map(\.id)))
            #expect(Set(again.map(\.apnsID)) == Set(first.map(\.apnsID)))
            #expect(again.allSatisfy { $0.attempt == 2 })
        }
    }

    @Test("outcomes: sent, retry at a time, failed, expired")
    func outcomes() async throws {
        try await withEachStore { store, _ in
            let rows = try await (1...4).asyncMap { try await store.register(try registration($0, watching: []), now: t0).rowID }
            _ = try await store.enqueue([event("e", rows: rows)], checkpoint: nil, now: t0)
            let c = try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0, lease: .seconds(30))
            try await store.complete([
                .sent(id: c[0].id), .retry(id: c[1].id, at: t0.addingTimeInterval(60), reason: "ServiceUnavailable"),
                .failed(id: c[2].id, reason: "TopicDisallowed"), .expired(id: c[3].id),
            ], now: t0)
            #expect(try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0.addingTimeInterval(59), lease: .seconds(30)).isEmpty)
            #expect(try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0.addingTimeInterval(60), lease: .seconds(30)).map(\.id) == [c[1].id])
            let stats = try await store.stats()
            #expect(stats.deliveries[.sent] == 1 && stats.deliveries[.failed] == 1 && stats.deliveries[.expired] == 1)
            #expect(stats.failureReasons["TopicDisallowed"] == 1)
        }
    }

    @Test("a throttled token: the delivery and the device's other pending ones wait until the time given; other devices do not")
    func throttledDevice() async throws {
        try await withEachStore { store, _ in
            let a = try await store.register(try registration(1, watching: []), now: t0)
            let b = try await store.register(try registration(2, watching: []), now: t0)
            _ = try await store.enqueue([event("e1", rows: [a.rowID])], checkpoint: nil, now: t0)
            let c = try await store.claimDue(app: "kasia", platform: .ios, limit: 1, now: t0, lease: .seconds(30))
            _ = try await store.enqueue([event("e2", rows: [a.rowID, b.rowID])], checkpoint: nil, now: t0)
            try await store.complete([.retryDevice(id: c[0].id, deviceRowID: a.rowID, at: t0.addingTimeInterval(60), reason: "TooManyRequests")], now: t0)
            // Only the other device's delivery is due now; both of the throttled device's are due at 60 s.
            #expect(try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0.addingTimeInterval(59), lease: .seconds(30)).map(\.device.rowID) == [b.rowID])
            let due = try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0.addingTimeInterval(60), lease: .seconds(30))
            #expect(due.map(\.device.rowID) == [a.rowID, a.rowID])
        }
    }

    @Test("410 compare-and-delete: older than the last registration keeps the device, newer deletes it")
    func compareAndDelete() async throws {
        try await withEachStore { store, _ in
            let d = try await store.register(try registration(1, watching: [.session("s")]), now: t0)
            _ = try await store.enqueue([event("e1", rows: [d.rowID])], checkpoint: nil, now: t0)
            var c = try await store.claimDue(app: "kasia", platform: .ios, limit: 1, now: t0, lease: .seconds(30))
            // APNs saw the token die before the device registered: keep it.
            try await store.complete([.tokenDead(id: c[0].id, deviceRowID: d.rowID, since: t0.addingTimeInterval(-60), reason: "Unregistered")], now: t0)
            #expect(try await store.status(app: "kasia", token: d.token, now: t0) != nil)

            _ = try await store.enqueue([event("e2", rows: [d.rowID])], checkpoint: nil, now: t0)
            c = try await store.claimDue(app: "kasia", platform: .ios, limit: 1, now: t0, lease: .seconds(30))
            try await store.complete([.tokenDead(id: c[0].id, deviceRowID: d.rowID, since: t0.addingTimeInterval(60), reason: "Unregistered")], now: t0)
            #expect(try await store.status(app: "kasia", token: d.token, now: t0) == nil)
            #expect(try await store.devices(app: "kasia", watching: "session:s").isEmpty)
        }
    }

    @Test("a bad token disables the device and drops its pending deliveries; registering again revives it")
    func badToken() async throws {
        try await withEachStore { store, _ in
            let d = try await store.register(try registration(1, watching: [.session("s")]), now: t0)
            _ = try await store.enqueue([event("e1", rows: [d.rowID]), event("e2", rows: [d.rowID])], checkpoint: nil, now: t0)
            let c = try await store.claimDue(app: "kasia", platform: .ios, limit: 1, now: t0, lease: .seconds(30))
            try await store.complete([.tokenDead(id: c[0].id, deviceRowID: d.rowID, since: nil, reason: "BadDeviceToken")], now: t0)
            #expect(try await store.devices(app: "kasia", watching: "session:s").isEmpty)
            #expect(try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0.addingTimeInterval(3_600), lease: .seconds(30)).isEmpty)
            let stats = try await store.stats()
            #expect(stats.deliveries[.failed] == 1 && stats.deliveries[.dropped] == 1)
            // The one attempt made is the failure; the one never sent is dropped, by the same reason.
            #expect(stats.failureReasons == ["BadDeviceToken": 1] && stats.droppedReasons == ["BadDeviceToken": 1])
            _ = try await store.register(try registration(1, watching: [.session("s")]), now: t0.addingTimeInterval(5))
            #expect(try await store.devices(app: "kasia", watching: "session:s").count == 1)
        }
    }

    @Test("expiry and stale-device cleanup count what they remove")
    func expiryAndCleanup() async throws {
        try await withEachStore { store, _ in
            let d1 = try await store.register(try registration(1, watching: []), now: t0)
            let d2 = try await store.register(try registration(2, watching: []), now: t0.addingTimeInterval(86_400 * 100))
            _ = try await store.enqueue([event("e", rows: [d1.rowID, d2.rowID], expires: t0.addingTimeInterval(60))], checkpoint: nil, now: t0)
            #expect(try await store.expire(now: t0.addingTimeInterval(59)) == 0)
            #expect(try await store.expire(now: t0.addingTimeInterval(60)) == 2)
            #expect(try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0.addingTimeInterval(61), lease: .seconds(30)).isEmpty)
            #expect(try await store.deleteStaleDevices(lastSeenBefore: t0.addingTimeInterval(86_400 * 90)) == 1)
            #expect(try await store.stats().devices == ["kasia": ["ios": 1]])
        }
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}

@Suite("apns-ids of deliveries")
struct APNsIDTests {
    @Test("one event's deliveries get distinct, well-formed apns-ids; another event's differ")
    func distinct() async throws {
        try await withEachStore { store, _ in
            var rows: [Int64] = []
            for i in 0..<300 { rows.append(try await store.register(try registration(i, watching: [.session("s")]), now: t0).rowID) }
            _ = try await store.enqueue([event("a", rows: rows), event("b", rows: rows)], checkpoint: nil, now: t0)
            let claimed = try await store.claimDue(app: "kasia", platform: .ios, limit: 1_000, now: t0, lease: .seconds(30))
            #expect(claimed.count == 600)
            #expect(Set(claimed.map(\.apnsID)).count == 600)
        }
    }
}

@Suite("SQLite durability")
struct SQLiteDurabilityTests {
    @Test("the store syncs the WAL at every commit (synchronous = FULL), so a 2xx survives power loss")
    func synchronousFull() async throws {
        try await withStore { store, _ in
            let mode = try await store.synchronousMode()
            #expect(mode == 2)
        }
    }

    @Test("the database, its WAL and its shared memory are readable by their owner only (mode 0600): they hold every token")
    func ownerOnly() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-mode-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("herald.sqlite").path
        let store = try SQLiteStore(path: path)
        try await store.migrate()
        _ = try await store.register(try registration(1, watching: []), now: t0)
        for file in [path, path + "-wal", path + "-shm"] {
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file): \(String(mode ?? 0, radix: 8))")
        }
    }
}

/// Instances on one database send one JWT per key (docs/apns.md: never `TooManyProviderTokenUpdates`).
@Suite("Store: the shared APNs provider token (SQLite, and PostgreSQL when configured)")
struct ProviderTokenLedgerTests {
    static let key = APNsSigningKey(privateKey: .init(), keyID: "KEY1234567", teamID: "TEAM123456")

    /// Two "instances" (two stores on the same database), each with its own token source.
    @Test("two instances adopt one token; it is re-minted only after 50 minutes, or after a rejection once 20 minutes have passed")
    func oneTokenAcrossInstances() async throws {
        try await withEachStore { first, reopen in
            let second = try await reopen()
            let clock = ManualClock(now: Date())
            let a = APNsProviderTokenSource(key: Self.key, ledger: first, now: clock.now)
            let b = APNsProviderTokenSource(key: Self.key, ledger: second, now: clock.now)
            // Many senders on both at once: one mint in all.
            let tokens = await withTaskGroup(of: APNsProviderToken.self) { group in
                for i in 0..<40 { group.addTask { await (i % 2 == 0 ? a : b).currentToken() } }
                return await group.reduce(into: Set<APNsProviderToken>()) { $0.insert($1) }
            }
            #expect(tokens.count == 1)
            #expect(a.mintedCount + b.mintedCount == 1)
            let token = tokens.first!

            // APNs refuses it at 10 minutes: too early to mint, both keep it.
            clock.advance(by: 600)
            #expect(!a.refreshRequested(after: token))
            #expect(await a.currentToken() == token)
            // At 25 minutes the refusal is honoured — once: b adopts a's new token.
            clock.advance(by: 900)
            #expect(a.refreshRequested(after: token))
            let renewed = await a.currentToken()
            #expect(renewed != token)
            #expect(b.refreshRequested(after: token))
            #expect(await b.currentToken() == renewed)
            #expect(a.mintedCount + b.mintedCount == 2)

            // b's token is from the ledger: at 50 minutes of *its* age both move on, with one mint.
            clock.advance(by: 49 * 60)
            #expect(await b.currentToken() == renewed)
            clock.advance(by: 60)
            let third = await b.currentToken()
            #expect(third != renewed)
            #expect(await a.currentToken() == third)
            #expect(a.mintedCount + b.mintedCount == 3)
        }
    }

    @Test("an unreachable ledger keeps the current token for its hour, then mints locally")
    func ledgerDown() async throws {
        struct Down: CredentialLedger {
            func credential(
                service: String, key: String, keep: @escaping @Sendable (LedgerCredential) -> Bool,
                make: @escaping @Sendable () async throws -> LedgerCredential
            ) async throws -> (credential: LedgerCredential, made: Bool) { throw CancellationError() }
        }
        let clock = ManualClock(now: Date())
        let source = APNsProviderTokenSource(key: Self.key, ledger: Down(), now: clock.now)
        let first = await source.currentToken()
        #expect(source.mintedCount == 1)
        clock.advance(by: 55 * 60)  // due for refresh, ledger still down: the token has 5 minutes left
        #expect(await source.currentToken() == first)
        clock.advance(by: 5 * 60)
        #expect(await source.currentToken() != first)
    }
}

@Suite("Store: the shared FCM access token and Android lanes (SQLite, and PostgreSQL when configured)")
struct FCMLedgerAndLaneTests {
    static let account = try! FCMServiceAccount(json: FCMServiceAccount.generateFile(projectID: "herald-ledger", clientEmail: "ledger@herald-ledger.iam.gserviceaccount.com", tokenURI: URL(string: "https://127.0.0.1/token")!))

    /// A token endpoint that hands out numbered tokens for an hour and counts its grants.
    final class TokenEndpoint: Sendable {
        let grants = Mutex(0)
        func exchange(_ body: String) async throws -> (status: Int, body: [UInt8]) {
            let n = grants.withLock { $0 += 1; return $0 }
            return (200, Array(#"{"access_token":"ya29.test-\#(n)","expires_in":3600,"token_type":"Bearer"}"#.utf8))
        }
    }

    @Test("two instances use one access token: one grant for both; a refused token is replaced once and adopted by the other; at 55 minutes one refresh")
    func oneAccessTokenAcrossInstances() async throws {
        try await withEachStore { first, reopen in
            let second = try await reopen()
            let clock = ManualClock(now: Date())
            let endpoint = TokenEndpoint()
            let a = FCMAccessTokenSource(account: Self.account, ledger: first, now: clock.now, exchange: endpoint.exchange)
            let b = FCMAccessTokenSource(account: Self.account, ledger: second, now: clock.now, exchange: endpoint.exchange)
            // Many senders on one instance: one grant.
            let tokens = try await withThrowingTaskGroup(of: FCMAccessToken.self) { group in
                for _ in 0..<20 { group.addTask { try await a.currentToken() } }
                return try await group.reduce(into: Set<FCMAccessToken>()) { $0.insert($1) }
            }
            #expect(tokens.count == 1)
            let token = try #require(tokens.first)
            // The other instance adopts it.
            #expect(try await b.currentToken().value == token.value)
            #expect(endpoint.grants.withLock { $0 } == 1)

            // FCM refuses it on a: a new grant; b, refused too, adopts a's.
            a.invalidate(token)
            let renewed = try await a.currentToken()
            #expect(renewed.value != token.value)
            b.invalidate(token)
            #expect(try await b.currentToken().value == renewed.value)
            #expect(endpoint.grants.withLock { $0 } == 2)

            // Within 5 minutes of its expiry: one refresh for both.
            clock.advance(by: 56 * 60)
            let third = try await b.currentToken()
            #expect(third.value != renewed.value)
            #expect(try await a.currentToken().value == third.value)
            #expect(endpoint.grants.withLock { $0 } == 3)
        }
    }

    @Test("each push service's lane claims its own platform's deliveries; a Firebase Installation ID keeps its kind")
    func claimsByPlatform() async throws {
        try await withEachStore { store, _ in
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let phone = try await store.register(
                Registration(app: "mixed", token: try APNsTokenRule().token(String(repeating: "ab", count: 32)), attributes: DeviceAttributes(apnsEnvironment: .sandbox), watchSet: .empty),
                now: now)
            let fid = try await store.register(
                Registration(app: "mixed", token: try FCMTokenRule().token("cXyZ0123456789_-abcdeF", kind: .fid), attributes: DeviceAttributes(apnsEnvironment: .sandbox), watchSet: .empty),
                now: now)
            #expect(fid.attributes.tokenKind == .fid)
            #expect(phone.attributes.tokenKind == .token)
            let push = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
            _ = try await store.enqueue(
                [NewEvent(id: "e1", app: "mixed", template: "custom", push: push, expiresAt: now.addingTimeInterval(3600), deviceRowIDs: [phone.rowID, fid.rowID])],
                checkpoint: nil, now: now)
            let android = try await store.claimDue(app: "mixed", platform: .android, limit: 10, now: now, lease: .seconds(30))
            #expect(android.map(\.device.rowID) == [fid.rowID])
            #expect(android.first?.device.attributes.tokenKind == .fid)
            let ios = try await store.claimDue(app: "mixed", platform: .ios, limit: 10, now: now, lease: .seconds(30))
            #expect(ios.map(\.device.rowID) == [phone.rowID])
        }
    }

    @Test("a Web Push subscription: the endpoint is the token, its keys come back with every read and claim")
    func webSubscriptions() async throws {
        try await withEachStore { store, _ in
            let now = Date(timeIntervalSince1970: 1_800_000_000)
            let keys = try WebPushKeys(p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", auth: "BTBZMqHH6r4Tts7J_aSIgg")
            let endpoint = "https://push.example.com/wpush/v2/gAAAA"
            let browser = try await store.register(
                Registration(app: "web", token: try WebPushTokenRule().token(endpoint), attributes: DeviceAttributes(apnsEnvironment: .production).setting(webPushKeys: keys), watchSet: .empty),
                now: now)
            #expect(browser.platform == .web && browser.attributes.webPushKeys == keys)
            #expect(try await store.devices(app: "web", tokens: [endpoint]).first?.attributes.webPushKeys == keys)
            let push = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
            _ = try await store.enqueue(
                [NewEvent(id: "w1", app: "web", template: "custom", push: push, expiresAt: now.addingTimeInterval(3600), deviceRowIDs: [browser.rowID])],
                checkpoint: nil, now: now)
            let claimed = try await store.claimDue(app: "web", platform: .web, limit: 10, now: now, lease: .seconds(30))
            #expect(claimed.map(\.device.token) == [endpoint])
            #expect(claimed.first?.device.attributes.webPushKeys == keys)
            #expect(try await store.claimDue(app: "web", platform: .ios, limit: 10, now: now, lease: .seconds(30)).isEmpty)
        }
    }
}

@Suite("Store: retention (SQLite, and PostgreSQL when configured)")
struct StoreRetentionTests {
    @Test("pruning deletes old events whose deliveries all finished, with them; an old event with a pending delivery and every newer one stay; a large event goes over several bounded batches")
    func pruneFinished() async throws {
        try await withEachStore { store, _ in
            let devices = try await store.register((1...30).map { try registration($0, watching: []) }, now: t0)
            let rows = devices.map(\.rowID)
            // At t0: "done" (3 deliveries, all to finish), "waiting" (one left pending), "big" (30 deliveries).
            // At t0 + 2 h: "recent", finished too but inside the retention.
            _ = try await store.enqueue([event("done", rows: Array(rows[0..<3])), event("waiting", rows: Array(rows[3..<5]))], checkpoint: nil, now: t0)
            _ = try await store.enqueue([event("big", rows: rows)], checkpoint: nil, now: t0.addingTimeInterval(1))
            _ = try await store.enqueue([event("recent", rows: [rows[0]])], checkpoint: nil, now: t0.addingTimeInterval(7_200))
            let now = t0.addingTimeInterval(7_300)
            let claimed = try await store.claimDue(app: "kasia", platform: .ios, limit: 1_000, now: now, lease: .seconds(30))
            #expect(claimed.count == 36)
            let waitingOne = try #require(claimed.first { $0.eventID == "waiting" })
            var outcomes: [DeliveryOutcome] = claimed.filter { $0.id != waitingOne.id }.map { .sent(id: $0.id) }
            outcomes[0] = .failed(id: claimed.first { $0.eventID == "done" }!.id, reason: "BadDeviceToken")
            try await store.complete(outcomes, now: now)
            try await store.complete([.retry(id: waitingOne.id, at: now, reason: "ServiceUnavailable")], now: now)
            #expect(try await store.stats().deliveries == [.sent: 34, .failed: 1, .pending: 1])

            // A retention of one hour: the cutoff is t0 + 6,300 s. Batches of at most 8 deliveries.
            let cutoff = now.addingTimeInterval(-3_600)
            var cursor: PruneCursor?
            var batches: [PruneBatch] = []
            repeat {
                let batch = try await store.pruneFinished(createdBefore: cutoff, after: cursor, limit: 8)
                #expect(batch.deliveries <= 8)
                batches.append(batch)
                cursor = batch.next
            } while cursor != nil && batches.count < 20
            #expect(cursor == nil)
            #expect(batches.map(\.deliveries).reduce(0, +) == 3 + 30)
            #expect(batches.map(\.events).reduce(0, +) == 2)
            #expect(batches.count >= 5, "30 deliveries of one event at 8 a batch: \(batches)")
            let left = try await store.stats().deliveries
            #expect(left == [.sent: 2, .pending: 1], "\(left)")
            // What stays is still usable: the pending one is claimed, and a pass finds nothing more.
            #expect(try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: now.addingTimeInterval(60), lease: .seconds(30)).map(\.eventID) == ["waiting"])
            let again = try await store.pruneFinished(createdBefore: cutoff, after: nil, limit: 8)
            #expect(again.deliveries == 0 && again.events == 0 && again.next == nil)
            // A deleted event's dedupe key and id no longer block anything; the recent one's still does.
            #expect(try await store.enqueue([event("done", rows: [rows[0]])], checkpoint: nil, now: now) == ["done": 1])
        }
    }
}

@Suite("Store: the counters /v1/stats reads (SQLite, and PostgreSQL when configured)")
struct StoreCounterTests {
    @Test("every change moves the counters: enqueue, claim, each outcome, expiry, a device's removal and its cascade, a platform change, pruning")
    func countersFollowEveryChange() async throws {
        try await withEachStore { store, reopen in
            let rows = try await (1...5).asyncMap { try await store.register(try registration($0, watching: []), now: t0).rowID }
            _ = try await store.register(try registration(7, app: "other", watching: []), now: t0)
            #expect(try await store.stats().devices == ["kasia": ["ios": 5], "other": ["ios": 1]])

            _ = try await store.enqueue([event("e1", rows: rows)], checkpoint: nil, now: t0)
            #expect(try await store.stats().deliveries == [.pending: 5])
            let c = try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0, lease: .seconds(30))
            #expect(try await store.stats().deliveries == [.sending: 5])
            func claimed(_ i: Int) throws -> Int64 { try #require(c.first { $0.device.rowID == rows[i] }).id }
            try await store.complete([
                .sent(id: try claimed(0)), .failed(id: try claimed(1), reason: "TopicDisallowed"),
                .retry(id: try claimed(2), at: t0.addingTimeInterval(5), reason: "ServiceUnavailable"),
                .failed(id: try claimed(3), reason: "TopicDisallowed"),
                .tokenDead(id: try claimed(4), deviceRowID: rows[4], since: nil, reason: "BadDeviceToken"),
            ], now: t0)
            var stats = try await store.stats()
            #expect(stats.deliveries == [.pending: 1, .sent: 1, .failed: 3])
            // A retry's reason is not a failure reason: only failed deliveries count by it.
            #expect(stats.failureReasons == ["TopicDisallowed": 2, "BadDeviceToken": 1])

            // Expiry; then a device removed with its pending deliveries (the cascade).
            _ = try await store.enqueue([event("e2", rows: [rows[0], rows[1]], expires: t0.addingTimeInterval(60)), event("e3", rows: [rows[2]])],
                                        checkpoint: nil, now: t0)
            #expect(try await store.stats().deliveries == [.pending: 4, .sent: 1, .failed: 3])
            #expect(try await store.expire(now: t0.addingTimeInterval(60)) == 2)
            #expect(try await store.unregister(app: "kasia", token: token(3).value))
            stats = try await store.stats()
            #expect(stats.deliveries == [.sent: 1, .failed: 3, .expired: 2])
            #expect(stats.devices == ["kasia": ["ios": 4], "other": ["ios": 1]])

            // A token registered again as another platform's: moved between platforms, not added.
            _ = try await store.register(try registration(8, watching: []), now: t0)
            let android = try FCMTokenRule().token(token(8).value)
            _ = try await store.register([Registration(app: "kasia", token: android, attributes: DeviceAttributes(apnsEnvironment: .sandbox), watchSet: .empty)], now: t0)
            #expect(try await store.stats().devices == ["kasia": ["ios": 4, "android": 1], "other": ["ios": 1]])

            // Pruning every finished event empties the delivery counters; a restarted process reads the same.
            var cursor: PruneCursor?
            repeat {
                cursor = try await store.pruneFinished(createdBefore: t0.addingTimeInterval(1), after: cursor, limit: 3).next
            } while cursor != nil
            try await store.compactCounters()
            stats = try await reopen().stats()
            #expect(stats.deliveries.isEmpty && stats.failureReasons.isEmpty, "\(stats)")
            #expect(stats.devices == ["kasia": ["ios": 4, "android": 1], "other": ["ios": 1]])
        }
    }
}

@Suite("Store: devices a request names itself (Matrix pushkeys), and the tokens a push service called dead")
struct NamedDeviceTests {
    func named(_ i: Int, registeredAt: Date) -> NamedDevice {
        NamedDevice(app: "kasia", token: token(i), attributes: DeviceAttributes(apnsEnvironment: .sandbox), registeredAt: registeredAt)
    }

    @Test("admitted once, marked seen; a 410 deletes it and remembers the token; an older pusher stays dead, a newer one revives it")
    func deadTokens() async throws {
        try await withEachStore { store, reopen in
            let pusherSet = t0.addingTimeInterval(-3_600)
            let first = try await store.admit([named(1, registeredAt: pusherSet), named(2, registeredAt: pusherSet)], now: t0)
            let rows = try first.map { try #require($0).rowID }
            let again = try await store.admit([named(1, registeredAt: pusherSet)], now: t0.addingTimeInterval(10))
            #expect(again.map { $0?.rowID } == [rows[0]], "the same device, not a second one")
            #expect(again[0]?.lastSeen == t0, "seen within the hour: decided by a read, nothing written")
            let hourLater = try await store.admit([named(1, registeredAt: pusherSet)], now: t0.addingTimeInterval(3_601))
            #expect(hourLater[0]?.lastSeen == t0.addingTimeInterval(3_601))
            #expect(try await store.stats().devices == ["kasia": ["ios": 2]])

            // APNs: 410 Unregistered at t0 (after the pusher was set): the device goes, its token is remembered.
            _ = try await store.enqueue([event("e1", rows: rows)], checkpoint: nil, now: t0)
            let claimed = try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0, lease: .seconds(30))
            let one = try #require(claimed.first { $0.device.rowID == rows[0] })
            let two = try #require(claimed.first { $0.device.rowID == rows[1] })
            try await store.complete([
                .tokenDead(id: one.id, deviceRowID: rows[0], since: t0, reason: "Unregistered"),
                .tokenDead(id: two.id, deviceRowID: rows[1], since: nil, reason: "BadDeviceToken"),
            ], now: t0)
            let store = try await reopen()
            #expect(try await store.admit([named(1, registeredAt: pusherSet), named(2, registeredAt: pusherSet)], now: t0).allSatisfy { $0 == nil })
            #expect(try await store.stats().devices == ["kasia": ["ios": 1]], "the disabled one is kept, the deleted one not made again")
            // The pusher set again after the token died: alive again (and a disabled device enabled).
            let revived = try await store.admit(
                [named(1, registeredAt: t0.addingTimeInterval(1)), named(2, registeredAt: t0.addingTimeInterval(1))], now: t0.addingTimeInterval(2))
            #expect(revived.allSatisfy { $0 != nil && $0?.disabledReason == nil })
            #expect(revived[1]?.rowID == rows[1])

            // A 410 older than the pusher's registration keeps the device (compare-and-delete) and remembers nothing.
            _ = try await store.enqueue([event("e2", rows: [revived[0]!.rowID])], checkpoint: nil, now: t0.addingTimeInterval(3))
            let late = try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0.addingTimeInterval(3), lease: .seconds(30))
            try await store.complete([.tokenDead(id: late[0].id, deviceRowID: revived[0]!.rowID, since: t0, reason: "Unregistered")], now: t0.addingTimeInterval(3))
            #expect(try await store.admit([named(1, registeredAt: t0.addingTimeInterval(1))], now: t0.addingTimeInterval(4))[0] != nil)

            // A registration through the API revives a token too; forgotten tokens after 30 days.
            _ = try await store.enqueue([event("e3", rows: [revived[1]!.rowID])], checkpoint: nil, now: t0.addingTimeInterval(5))
            let third = try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: t0.addingTimeInterval(5), lease: .seconds(30))
            try await store.complete([.tokenDead(id: third[0].id, deviceRowID: revived[1]!.rowID, since: nil, reason: "BadDeviceToken")], now: t0.addingTimeInterval(5))
            #expect(try await store.admit([named(2, registeredAt: t0)], now: t0.addingTimeInterval(6))[0] == nil)
            _ = try await store.register(try registration(2, watching: []), now: t0.addingTimeInterval(7))
            #expect(try await store.admit([named(2, registeredAt: t0)], now: t0.addingTimeInterval(8))[0] != nil)
            #expect(try await store.pruneDeadTokens(deadBefore: t0.addingTimeInterval(100)) == 0, "nothing left to forget")
        }
    }
}

/// TLS to PostgreSQL as libpq reads `sslmode` and `sslrootcert`.
@Suite("PostgreSQL over TLS")
struct PostgresTLSTests {
    @Test("sslmode and sslrootcert as libpq reads them; anything else in the URL is refused")
    func parsing() throws {
        func mode(_ query: String, host: String = "127.0.0.1") throws -> PostgresTLSMode {
            try PostgresTLSMode(query: URLComponents(string: "postgres://u@h/d" + query)?.queryItems ?? [], host: host)
        }
        // No sslmode: libpq's prefer on loopback; elsewhere require, so a man in the middle who
        // says "no TLS" stops the connection instead of reading it.
        #expect(try mode("").mode == .prefer)
        #expect(try mode("", host: "[::1]").mode == .prefer)
        #expect(try mode("", host: "db.example.com").mode == .require)
        #expect(try mode("", host: "10.0.0.5").mode == .require)
        #expect(try mode("?sslmode=prefer", host: "db.example.com").mode == .prefer)
        // verify-ca checks no host name: without its own CA it would trust any public certificate.
        #expect(throws: PostgresStoreError.self) { try mode("?sslmode=verify-ca") }
        #expect(try mode("?sslmode=disable").mode == .disable)
        #expect(try mode("?sslmode=require").mode == .require)
        #expect(try mode("?sslmode=verify-full").mode == .verifyFull)
        // libpq: require with a root certificate checks it, as verify-ca does.
        let ca = FileManager.default.temporaryDirectory.appendingPathComponent("herald-ca-\(UUID()).pem")
        try Data("not read here".utf8).write(to: ca)
        defer { try? FileManager.default.removeItem(at: ca) }
        #expect(try mode("?sslmode=require&sslrootcert=\(ca.path)").mode == .verifyCA)
        #expect(throws: PostgresStoreError.self) { try mode("?sslmode=verify_full") }
        #expect(throws: PostgresStoreError.self) { try mode("?sslmode=require&sslrootcert=/nonexistent/ca.pem") }
        #expect(throws: PostgresStoreError.self) { try mode("?ssl=true") }
    }

    /// Whether a store on `url` answers a query within `seconds` (a refused or untrusted server
    /// never does: its pool keeps retrying until the deadline).
    static func usable(_ url: String, within seconds: Int) async -> Bool {
        guard let store = try? PostgresStore(url: url) else { return false }
        let running = Task { await store.run() }
        defer { running.cancel() }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { (try? await store.ping()) != nil }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    @Test("the test server (CI's, with a certificate made at its start) takes verify-full with its CA, require without one; refuses plain and an untrusted certificate",
          .enabled(if: TestPostgres.serverURL?.contains("sslmode=verify-full") == true))
    func modesAgainstServer() async throws {
        try await TestPostgres.withDatabase(serverURL: try #require(TestPostgres.serverURL)) { url in
            var components = try #require(URLComponents(string: url))
            #expect(components.queryItems?.contains { $0.name == "sslrootcert" } == true)
            func with(_ items: [URLQueryItem]) -> String {
                components.queryItems = items
                return components.string!
            }
            // Accepted: the generous deadline only guards against a hang on a loaded machine.
            #expect(await Self.usable(url, within: 120))
            #expect(await Self.usable(with([URLQueryItem(name: "sslmode", value: "require")]), within: 120))
            // The server takes TCP connections over TLS only.
            #expect(await !Self.usable(with([URLQueryItem(name: "sslmode", value: "disable")]), within: 15))
            // The system's roots do not vouch for the test CA.
            #expect(await !Self.usable(with([URLQueryItem(name: "sslmode", value: "verify-full")]), within: 15))
        }
    }
}
