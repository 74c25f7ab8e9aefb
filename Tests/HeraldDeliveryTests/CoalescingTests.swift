import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldDelivery
import HeraldPushCore
import HeraldStore
import HeraldTestSupport
import KasiaProtocol
import Testing

/// Registers `count` devices of `default` from token number `first`, watching `key`; their tokens.
private func register(_ store: any Store, from first: Int, count: Int, watching keys: WatchKey...) async throws -> [String] {
    let registrations = try (first..<first + count).map { i in
        let hex = String(i, radix: 16)
        return Registration(
            app: "default", token: try APNsTokenRule().token(String(repeating: "0", count: 64 - hex.count) + hex),
            attributes: DeviceAttributes(apnsEnvironment: .sandbox), watchSet: try WatchSet(watched: keys))
    }
    return try await store.register(registrations, now: Date()).map(\.token)
}

/// A `custom` alert whose text is `n`, to `keys`, coalescing over `seconds`.
private func update(_ n: Int, keys: [String], seconds: Int64?) -> EventPublisher.Request {
    var request = EventPublisher.Request(app: "default", template: "custom", fields: .object([.init("aps", .object([.init("alert", .string("\(n)"))]))]))
    request.targets = EventPublisher.Targets(keys: keys)
    request.coalesceSeconds = seconds
    return request
}

/// The alert text a claimed delivery carries.
private func number(_ delivery: ClaimedDelivery) -> Int? {
    guard case .string(let text)? = (try? JSONValue(parsing: delivery.push.payload))?[path: ["aps", "alert"]] else { return nil }
    return Int(text)
}

@Suite("Coalescing: per device and watch key, at most one push per window, latest wins (SQLite, and PostgreSQL when configured)", .serialized)
struct CoalescingTests {
    @Test("100 events a second to one coalescing key, on the direct path and through a fan-out job: each device gets at most one push per window, the first at once and the latest last; the others are dropped as coalesced")
    func oneEachWindowLatestWins() async throws {
        try await withEachStore { store, _ in
            // 150 watchers: over the threshold, a fan-out job; 20: the direct path.
            let crowd = try await register(store, from: 0, count: 150, watching: .session("announcements"))
            let few = try await register(store, from: 1_000, count: 20, watching: .session("score"))
            let clock = ManualClock()
            let start = clock.now()
            let apps = AppDirectory([AppSettings(id: "default", publishKeys: ["pk"])])
            // Lanes that never run: the test is the sender, claiming what is due at each instant.
            let outbox = Outbox(queue: store, providers: [("default", [ScriptedProvider()])])
            let expander = FanoutExpander(store: store, apps: apps, outbox: outbox, platforms: [.ios], clock: clock)
            let publisher = EventPublisher(
                store: store, apps: apps, outbox: nil, clock: clock, platforms: [.ios], fanoutThreshold: 100, fanouts: expander)
            var pushes: [String: [(at: Date, n: Int)]] = [:]
            func send() async throws {
                while try await expander.round() != .idle {}
                let now = clock.now()
                let due = try await store.claimDue(app: "default", platform: .ios, limit: 10_000, now: now, lease: .seconds(30))
                for delivery in due { pushes[delivery.device.token, default: []].append((now, number(delivery) ?? -1)) }
                try await store.complete(due.map { .sent(id: $0.id) }, now: now)
            }
            var events: [String] = []
            // 100 events a second for a second, to each key; a 1 s window.
            for n in 0..<100 {
                let published = try await publisher.publish(
                    [update(n, keys: ["session:announcements"], seconds: 1), update(n, keys: ["session:score"], seconds: 1)], publisherKey: "pk")
                if n == 0 { #expect(published[0].event.fanout != nil && published[1].event.fanout == nil, "both paths are taken") }
                events += published.map(\.event.id)
                try await send()
                clock.advance(by: 0.01)
            }
            let posting = clock.now().timeIntervalSince(start)
            // Then time enough for the last slot.
            for _ in 0..<30 {
                clock.advance(by: 0.1)
                try await send()
            }
            for token in crowd + few {
                let got = try #require(pushes[token], "every watcher gets the updates")
                // One per window the posting spanned, plus the first: fewer than the 100 events.
                #expect(got.count <= 1 + Int(posting.rounded(.up)), "at most one push per window")
                for (a, b) in zip(got, got.dropFirst()) { #expect(b.at.timeIntervalSince(a.at) >= 1, "a window apart") }
                #expect(got.first?.n == 0, "the first goes at once")
                #expect(got.last?.n == 99, "the latest wins")
            }
            // Every other event's delivery was replaced while it waited.
            var dropped = 0
            for id in events {
                let status = try #require(try await store.event(id: id))
                dropped += status.reasons[.dropped]?["coalesced"] ?? 0
            }
            let sent = pushes.values.reduce(0) { $0 + $1.count }
            #expect(dropped + sent == 100 * (crowd.count + few.count), "each delivery sent once or dropped as coalesced")
            #expect(sent <= 2 * (crowd.count + few.count))
        }
    }

    @Test("a push in flight is not replaced: the next event waits for the window; another key is not held by it")
    func inFlightWaitsForWindow() async throws {
        try await withEachStore { store, _ in
            let token = try await register(store, from: 0, count: 1, watching: .session("a"), .session("b"))[0]
            let clock = ManualClock()
            let publisher = EventPublisher(
                store: store, apps: AppDirectory([AppSettings(id: "default", publishKeys: ["pk"])]), clock: clock, platforms: [.ios])
            func claim() async throws -> [ClaimedDelivery] {
                try await store.claimDue(app: "default", platform: .ios, limit: 10, now: clock.now(), lease: .seconds(60))
            }
            _ = try await publisher.publish([update(0, keys: ["session:a"], seconds: 10)], publisherKey: "pk")
            let first = try await claim()
            #expect(first.map(number) == [0] && first.first?.device.token == token)
            clock.advance(by: 1)
            _ = try await publisher.publish(
                [update(1, keys: ["session:a"], seconds: 10), update(2, keys: ["session:b"], seconds: 10)], publisherKey: "pk")
            #expect(try await claim().map(number) == [2], "key b goes at once; a's next waits for its window")
            try await store.complete(first.map { .sent(id: $0.id) }, now: clock.now())
            clock.advance(by: 8)
            #expect(try await claim().isEmpty, "still within a's window")
            clock.advance(by: 1)
            #expect(try await claim().map(number) == [1], "a window after the first")
        }
    }

    @Test("coalesce_seconds is refused naming it: out of 1 to 3,600, on a template that keeps every push, or on an event that does not target exactly one key")
    func refusals() async throws {
        try await withStore { store, _ in
            let publisher = EventPublisher(store: store, apps: AppDirectory([AppSettings(id: "default", publishKeys: ["pk"])]), platforms: [.ios])
            var kasia = EventPublisher.Request(app: "default", template: "kasia.payment", fields: .object([
                .init("tx_id", .string(String(repeating: "ab", count: 32))),
                .init("sender", .string(try KaspaAddress(prefix: .mainnet, version: .publicKey, payload: [UInt8](repeating: 7, count: 32)).string)),
                .init("timestamp", .int(1_760_000_000)), .init("daa_score", .int(1)),
            ]))
            kasia.targets = EventPublisher.Targets(keys: ["session:a"])
            kasia.coalesceSeconds = 5
            var tokens = update(0, keys: ["session:a"], seconds: 5)
            tokens.targets?.tokens = [String(repeating: "0", count: 64)]
            for request in [
                update(0, keys: ["session:a"], seconds: 0), update(0, keys: ["session:a"], seconds: 3_601),
                update(0, keys: ["session:a", "session:b"], seconds: 5), tokens, kasia,
            ] {
                await #expect {
                    _ = try await publisher.publish([request], publisherKey: "pk")
                } throws: { error in
                    (error as? Refusal)?.field == "coalesce_seconds"
                }
            }
            let accepted = try await publisher.publish([update(0, keys: ["session:a"], seconds: 3_600)], publisherKey: "pk")
            #expect(accepted.first?.event.coalescing == Coalescing(key: "session:a", window: 3_600_000))
        }
    }
}
