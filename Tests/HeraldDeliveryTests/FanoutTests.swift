import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldDelivery
import HeraldPushCore
import HeraldStore
import HeraldTestSupport
import KasiaProtocol
import Testing

private let announcements = "session:announcements"

/// Registers devices `range` of `app` watching `keys`, device ids `device-<i>`; returns their tokens in order.
@discardableResult
private func register(_ store: any Store, app: String = "default", _ range: Range<Int>, watching keys: [WatchKey]) async throws -> [String] {
    let registrations = try range.map { i in
        let hex = String(i, radix: 16)
        let token = String(repeating: "0", count: 64 - hex.count) + hex
        return Registration(
            app: app, token: try APNsTokenRule().token(token), attributes: DeviceAttributes(apnsEnvironment: .sandbox), deviceID: "device-\(i)",
            watchSet: try WatchSet(watched: keys))
    }
    return try await store.register(registrations, now: Date()).map(\.token)
}

private func publisher(_ store: any Store, outbox: Outbox?, expander: FanoutExpander?, threshold: Int = 100) -> EventPublisher {
    EventPublisher(
        store: store, apps: AppDirectory([AppSettings(id: "default", publishKeys: ["pk"]), AppSettings(id: "other", publishKeys: ["opk"])]),
        outbox: outbox, platforms: [.ios], fanoutThreshold: threshold, fanouts: expander)
}

private func announcement(keys: [String], excluding: [String]? = nil) -> EventPublisher.Request {
    var request = EventPublisher.Request(app: "default", template: "custom", fields: .object([.init("aps", .object([.init("alert", "news")]))]))
    request.targets = EventPublisher.Targets(keys: keys)
    request.excludeDeviceIDs = excluding
    return request
}

/// Waits (bounded by count, not asserted on time) until `done` holds.
private func waitUntil(_ done: () async throws -> Bool) async throws {
    for _ in 0..<1_500 {
        if try await done() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
}

@Suite("Fan-out jobs: one event to many devices, expanded a page at a time (SQLite, and PostgreSQL when configured)", .serialized)
struct FanoutTests {
    @Test("an event to a key over the threshold commits a job, no delivery per device; pages reach each watcher once, and none of another app, excluded or watching nothing")
    func jobReachesEachWatcherOnce() async throws {
        try await withEachStore { store, _ in
            let watchers = try await register(store, 0..<250, watching: [.session("announcements")])
            try await register(store, 250..<260, watching: [.session("other")])
            try await register(store, app: "other", 260..<270, watching: [.session("announcements")])
            let provider = ScriptedProvider()
            let outbox = Outbox(queue: store, providers: [("default", [provider])])
            let expander = FanoutExpander(store: store, apps: publisher(store, outbox: nil, expander: nil).apps, outbox: outbox, platforms: [.ios], pageSize: 40)
            let published = try await publisher(store, outbox: outbox, expander: expander)
                .publish([announcement(keys: [announcements], excluding: ["device-3", "device-7"])], publisherKey: "pk")[0]

            #expect(published.event.fanout != nil)
            #expect(published.event.deviceRowIDs.isEmpty)
            let before = try #require(try await store.event(id: published.event.id))
            #expect(before.deliveries.values.reduce(0, +) == 0, "nothing per device in the publish's transaction")
            #expect(before.fanout == FanoutProgress(devices: nil, expanded: 0, finished: false))

            // One page, by hand: its deliveries, the cursor, and what is left to expand.
            #expect(try await expander.round() == .expanded(38 /* 40 read, 2 excluded */))
            #expect(try await store.pendingFanoutDevices() == 260 - 38, "every app's watchers of the key counted, until the job finishes")

            let running = Task { await outbox.run() }
            let expanding = Task { try await expander.run() }
            defer { running.cancel(); expanding.cancel() }
            let expected = Set(watchers).subtracting([watchers[3], watchers[7]])
            try await waitUntil { Set(provider.sent.map(\.token)).count >= expected.count }
            try await waitUntil { try await store.event(id: published.event.id)?.deliveries[.sent] == expected.count }
            try await waitUntil { try await store.event(id: published.event.id)?.fanout?.finished == true }
            #expect(Set(provider.sent.map(\.token)) == expected)
            #expect(provider.sent.count == expected.count, "each watcher once")
            let after = try #require(try await store.event(id: published.event.id))
            #expect(after.fanout == FanoutProgress(devices: expected.count, expanded: expected.count, finished: true))
            #expect(after.deliveries[.sent] == expected.count)
            #expect(try await store.pendingFanoutDevices() == 0)
        }
    }

    @Test("a device watching two of an event's keys gets it once; a key under the threshold takes today's path")
    func severalKeysOnce() async throws {
        try await withEachStore { store, _ in
            let both = try await register(store, 0..<60, watching: [.session("a"), .session("b")])
            let onlyB = try await register(store, 60..<160, watching: [.session("b")])
            let few = try await register(store, 160..<170, watching: [.session("c")])
            let provider = ScriptedProvider()
            let outbox = Outbox(queue: store, providers: [("default", [provider])])
            let expander = FanoutExpander(
                store: store, apps: publisher(store, outbox: nil, expander: nil).apps, outbox: outbox, platforms: [.ios], pageSize: 25)
            let events = try await publisher(store, outbox: outbox, expander: expander)
                .publish([announcement(keys: ["session:a", "session:b"]), announcement(keys: ["session:c"])], publisherKey: "pk")
            #expect(events[0].event.fanout != nil)
            #expect(events[1].event.fanout == nil && events[1].event.deviceRowIDs.count == few.count)
            let running = Task { await outbox.run() }
            let expanding = Task { try await expander.run() }
            defer { running.cancel(); expanding.cancel() }
            let expected = both.count + onlyB.count + few.count
            try await waitUntil { provider.sent.count >= expected }
            try await waitUntil { try await store.event(id: events[0].event.id)?.fanout?.finished == true }
            #expect(provider.sent.count == expected)
            #expect(Set(provider.sent.map(\.token)) == Set(both + onlyB + few))
        }
    }

    @Test("killed mid-fan-out (a page leased and sent, unrecorded): a restart resumes from the cursor, every device gets the event, and only that page twice")
    func resumesAfterCrash() async throws {
        try await withEachStore { store, reopen in
            let watchers = try await register(store, 0..<300, watching: [.session("announcements")])
            let apps = publisher(store, outbox: nil, expander: nil).apps
            // The first process: its lanes never run, so its pages wait in the store.
            let deadOutbox = Outbox(queue: store, providers: [("default", [ScriptedProvider()])])
            let first = FanoutExpander(store: store, apps: apps, outbox: deadOutbox, platforms: [.ios], pageSize: 50)
            let published = try await publisher(store, outbox: deadOutbox, expander: first).publish([announcement(keys: [announcements])], publisherKey: "pk")[0]
            #expect(try await first.round() == .expanded(50))
            #expect(try await first.round() == .waiting, "the next page waits while the last one is unclaimed")
            // Its lane leased that page and sent it; the next page was expanded; then the process
            // died before recording a thing.
            let inFlight = try await store.claimDue(app: "default", platform: .ios, limit: 50, now: Date(), lease: .milliseconds(200))
            #expect(inFlight.count == 50)
            #expect(try await first.round() == .expanded(50))

            let restarted = try await reopen()
            let provider = ScriptedProvider()
            var settings = OutboxSettings()
            settings.idleInterval = .milliseconds(100)
            let outbox = Outbox(queue: restarted, providers: [("default", [provider])], settings: settings)
            let second = FanoutExpander(store: restarted, apps: apps, outbox: outbox, platforms: [.ios], pageSize: 50)
            let running = Task { await outbox.run() }
            let expanding = Task { try await second.run() }
            defer { running.cancel(); expanding.cancel() }
            try await waitUntil { Set(provider.sent.map(\.token)).count >= watchers.count }
            try await waitUntil { try await restarted.event(id: published.event.id)?.deliveries[.sent] == watchers.count }
            let sentBefore = inFlight.map(\.device.token)
            let everyone = Set(provider.sent.map(\.token) + sentBefore)
            #expect(everyone == Set(watchers), "none skipped")
            #expect(provider.sent.count == Set(provider.sent.map(\.token)).count, "the restarted process sends each once")
            let twice = Set(provider.sent.map(\.token)).intersection(sentBefore)
            #expect(twice.isSubset(of: Set(sentBefore)) && twice.count <= 50, "duplicates at most the page in flight")
            // A job whose last page was full finishes at the next, empty, read: after the sends.
            try await waitUntil { try await restarted.event(id: published.event.id)?.fanout?.finished == true }
            #expect(try await restarted.event(id: published.event.id)?.fanout?.finished == true)
        }
    }

    @Test("two instances expanding one job share its pages: every device gets one delivery")
    func instancesSharePages() async throws {
        try await withEachStore { store, reopen in
            let watchers = try await register(store, 0..<400, watching: [.session("announcements")])
            let other = try await reopen()
            let apps = publisher(store, outbox: nil, expander: nil).apps
            // Lanes that never run: each page's deliveries stay in the store, to be counted.
            let expanders = [store, other].map { s in
                FanoutExpander(store: s, apps: apps, outbox: Outbox(queue: s, providers: [("default", [ScriptedProvider()])]), platforms: [.ios], pageSize: 30)
            }
            let published = try await publisher(store, outbox: nil, expander: nil).publish([announcement(keys: [announcements])], publisherKey: "pk")[0]
            // Both read the job at the same cursor: the first commit takes the page, the second writes nothing.
            let job = try #require(try await store.openFanouts(limit: 1).first)
            let page = try await store.fanoutCandidates(app: "default", key: announcements, after: 0, limit: 30)
            let to = FanoutCursor(keyIndex: 0, row: page.through)
            let taken = try await store.expand(job, from: job.cursor, to: to, finished: false, devices: page.devices, watchers: nil, now: Date(), claim: nil)
            let late = try await other.expand(job, from: job.cursor, to: to, finished: false, devices: page.devices, watchers: nil, now: Date(), claim: nil)
            #expect(taken?.created[job.eventID] == 30)
            #expect(late == nil)
            // Each instance expands and claims (its lanes' part) until the job is done.
            let claimed = try await withThrowingTaskGroup(of: [String].self) { group in
                for (expander, s) in zip(expanders, [store, other]) {
                    group.addTask {
                        var tokens: [String] = []
                        for _ in 0..<200 {
                            let round = try await expander.round()
                            tokens += try await s.claimDue(app: "default", platform: .ios, limit: 1_000, now: Date(), lease: .seconds(30)).map(\.device.token)
                            if round == .idle { break }
                        }
                        return tokens
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let status = try #require(try await store.event(id: published.event.id))
            // (The page expanded by hand left the watcher count unset: it is counted when the job finishes.)
            #expect(status.fanout == FanoutProgress(devices: watchers.count, expanded: watchers.count, finished: true))
            #expect(status.deliveries[.sending] == watchers.count, "one delivery per device, however the pages fell")
            #expect(Set(claimed) == Set(watchers) && claimed.count == watchers.count)
        }
    }

    @Test("a Kasia message from the chain to an address over the threshold commits a job with its checkpoint; the pages reach whom Kasia's routing reaches: watchers of the sender without routes, and those with the message's alias, not another")
    func kasiaJobRoutesAsDirect() async throws {
        try await withEachStore { store, _ in
            let sender = try KaspaAddress(prefix: .mainnet, version: .publicKey, payload: [UInt8](repeating: 7, count: 32))
            func devices(_ range: Range<Int>, aliases: [String]?) throws -> [Registration] {
                try range.map { i in
                    let hex = String(i, radix: 16)
                    let routes = try aliases.map { [try ContextualRoute(peer: sender, aliases: $0)] } ?? []
                    return Registration(
                        app: "default", token: try APNsTokenRule().token(String(repeating: "0", count: 64 - hex.count) + hex),
                        attributes: DeviceAttributes(apnsEnvironment: .sandbox), watchSet: try WatchSet(watched: [.kaspaAddress(sender)], routes: routes))
                }
            }
            let plain = try await store.register(try devices(0..<150, aliases: nil), now: Date()).map(\.token)
            let ours = try await store.register(try devices(150..<170, aliases: ["aa"]), now: Date()).map(\.token)
            _ = try await store.register(try devices(170..<190, aliases: ["bb"]), now: Date())
            let provider = ScriptedProvider()
            let outbox = Outbox(queue: store, providers: [("default", [provider])])
            let apps = publisher(store, outbox: nil, expander: nil).apps
            let expander = FanoutExpander(store: store, apps: apps, outbox: outbox, platforms: [.ios], pageSize: 30)
            let message = KasiaEvent(
                kind: .contextualMessage, txID: String(repeating: "ab", count: 32), sender: sender.string, alias: "aa",
                payloadHex: "00", timestamp: 1_760_000_000, daaScore: 1)
            let checkpoint = ChainCheckpoint(source: "kaspa", blockHash: "block", daaScore: 1)
            #expect(try await publisher(store, outbox: outbox, expander: expander).commit([message], checkpoint: checkpoint) == 0)
            #expect(try await store.checkpoint(source: "kaspa") == checkpoint, "the checkpoint commits with the job")
            #expect(try await store.openFanouts(limit: 10).count == 2, "a job per app: the chain's events go to every app")
            let running = Task { await outbox.run() }
            let expanding = Task { try await expander.run() }
            defer { running.cancel(); expanding.cancel() }
            try await waitUntil { try await store.openFanouts(limit: 10).isEmpty && provider.sent.count >= plain.count + ours.count }
            #expect(provider.sent.count == plain.count + ours.count)
            #expect(Set(provider.sent.map(\.token)) == Set(plain + ours))
        }
    }

    @Test("a job's deliveries, once sent, leave no row (the job counts them, and the stats): retention keeps a job until it is expanded and sent, then drops it with its event in one operation")
    func retentionDropsFinishedJob() async throws {
        try await withEachStore { store, _ in
            try await register(store, 0..<150, watching: [.session("announcements")])
            let apps = publisher(store, outbox: nil, expander: nil).apps
            let provider = ScriptedProvider()
            let outbox = Outbox(queue: store, providers: [("default", [provider])])
            let expander = FanoutExpander(store: store, apps: apps, outbox: outbox, platforms: [.ios], pageSize: 100)
            let published = try await publisher(store, outbox: outbox, expander: expander).publish([announcement(keys: [announcements])], publisherKey: "pk")[0]
            let later = Date().addingTimeInterval(3_600)
            _ = try await store.pruneFinished(createdBefore: later, after: nil, limit: 10_000)
            #expect(try await store.event(id: published.event.id) != nil, "an unexpanded job is kept")
            let running = Task { await outbox.run() }
            let expanding = Task { try await expander.run() }
            try await waitUntil { try await store.event(id: published.event.id)?.deliveries[.sent] == 150 }
            try await waitUntil { try await store.event(id: published.event.id)?.fanout?.finished == true }
            running.cancel()
            expanding.cancel()
            #expect(try await store.stats().deliveries[.sent] == 150, "the stats count a job's sent deliveries")
            var batches: [PruneBatch] = []
            for _ in 0..<10 where try await store.event(id: published.event.id) != nil {
                batches.append(try await store.pruneFinished(createdBefore: later, after: nil, limit: 10_000))
            }
            #expect(batches.map(\.events) == [1] && batches.map(\.deliveries) == [0], "the event and its job alone: no row per device was left")
            #expect(try await store.event(id: published.event.id) == nil)
            #expect(try await store.openFanouts(limit: 10).isEmpty)
            #expect((try await store.stats().deliveries[.sent] ?? 0) == 0, "the job's count goes with it")
        }
    }
}
