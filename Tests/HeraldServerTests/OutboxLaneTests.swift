import Foundation
import HeraldAPNs
import HeraldAPNsSimulator
import HeraldCore
import HeraldServer
import HeraldStore
import Testing

/// Per-app lanes, the credentials pause and the 413 shrink, through the real client, simulator and SQLite.
@Suite("Outbox lanes, credentials pause and payload shrink", .serialized)
struct OutboxLaneTests {
    @Test("one app's stalled APNs does not hold back another app's pushes")
    func lanesIsolateApps() async throws {
        // The slow app's pushes may wait 16 s for their answers (below): a deadline that allows it.
        try await OutboxHarness.with(keys: 2, requestTimeout: .seconds(30)) { h in
            let slow = try await h.register(app: "slow", count: 200)
            let fast = try await h.register(app: "fast", count: 200, first: 1_000)
            // The slow app's APNs answers each push after 8 s.
            for token in slow.tokens {
                _ = try h.simulator.inject(SimulatorFault(kind: .delay, token: token, delayMs: 8_000))
            }
            try await h.enqueue(app: "slow", rows: slow.rows)
            try await h.enqueue(app: "fast", rows: fast.rows)

            let outbox = Outbox(store: h.store, lanes: [
                OutboxLane(app: "slow", provider: APNsPushProvider(client: h.clients[0], topic: "com.example.slow")),
                OutboxLane(app: "fast", provider: APNsPushProvider(client: h.clients[1], topic: "com.example.fast")),
            ])
            let running = Task { await outbox.run() }
            let started = ContinuousClock.now
            // No slow push can be marked sent before its 8-second answer: 200 sent before then are
            // the fast app's, delivered while every slow one was still held.
            await h.wait(upTo: .seconds(7)) { (try? await h.store.stats().deliveries[.sent]) == 200 }
            let fastDone = ContinuousClock.now - started
            let fastAtSimulator = h.simulator.notifications().filter { $0.topic == "com.example.fast" }.count
            try await h.wait(upTo: .seconds(40)) { try await h.store.stats().deliveries[.sent] == 400 }
            running.cancel()
            await running.value

            #expect(fastDone < .seconds(7), "the fast app waited \(fastDone)")
            #expect(fastAtSimulator == 200)
            #expect(try await h.store.stats().deliveries[.sent] == 400)
            #expect(Set(h.simulator.notifications().filter { $0.topic == "com.example.slow" }.map(\.keyID)) == ["OUTBOX0000"])
            #expect(Set(h.simulator.notifications().filter { $0.topic == "com.example.fast" }.map(\.keyID)) == ["OUTBOX0001"])
        }
    }

    @Test("a 403 after the token refresh pauses that app only; one probe resumes it")
    func credentialsPause() async throws {
        try await OutboxHarness.with(keys: 2) { h in
            let refused = try await h.register(app: "refused", count: 20)
            let fine = try await h.register(app: "fine", count: 20, first: 1_000)
            // APNs refuses the refused app's provider token for 2.5 s (a revoked key, put right).
            for token in refused.tokens {
                _ = try h.simulator.inject(
                    SimulatorFault(kind: .respond, token: token, status: 403, reason: "InvalidProviderToken", durationMs: 2_500))
            }
            let (metrics, registry) = HeraldMetrics.prometheus()
            func paused() -> String? {
                let text = String(decoding: registry.emitToBuffer(), as: UTF8.self)
                return text.split(separator: "\n").first { $0.hasPrefix(#"herald_app_sends_paused{app="refused"}"#) }
                    .map { String($0.split(separator: " ").last ?? "") }
            }
            try await h.enqueue(app: "refused", rows: refused.rows)
            try await h.enqueue(app: "fine", rows: fine.rows)
            let outbox = Outbox(
                store: h.store,
                lanes: [
                    OutboxLane(app: "refused", provider: APNsPushProvider(client: h.clients[0], topic: "com.example.refused")),
                    OutboxLane(app: "fine", provider: APNsPushProvider(client: h.clients[1], topic: "com.example.fine")),
                ],
                credentialsPause: .seconds(1) ... .seconds(4), metrics: metrics)
            let running = Task { await outbox.run() }
            await h.wait(upTo: .seconds(5)) {
                h.simulator.notifications().count == 20 && (h.simulator.stats.reasons["InvalidProviderToken"] ?? 0) >= 20
                    && paused()?.hasPrefix("1") == true
            }
            let fineDelivered = h.simulator.notifications().filter { $0.topic == "com.example.fine" }.count
            let pausedGauge = paused()
            // Paused: no request of the refused app reaches APNs for the rest of the first pause.
            let refusedAtPause = h.simulator.stats.reasons["InvalidProviderToken"] ?? 0
            try await Task.sleep(for: .milliseconds(500))
            let refusedLater = h.simulator.stats.reasons["InvalidProviderToken"] ?? 0
            try await h.wait(upTo: .seconds(20)) { try await h.store.stats().deliveries[.sent] == 40 }
            running.cancel()
            await running.value

            #expect(fineDelivered == 20)
            #expect(pausedGauge?.hasPrefix("1") == true, "gauge \(pausedGauge ?? "absent")")
            #expect(refusedAtPause == 20)
            #expect(refusedLater == refusedAtPause)
            #expect(try await h.store.stats().deliveries[.sent] == 40)
            // One probe per pause: 1 s, then 2 s, reaches past the 2.5 s refusal with one or two probes refused.
            let total = h.simulator.stats.reasons["InvalidProviderToken"] ?? 0
            #expect((21...22).contains(total), "\(total) refused requests")
            #expect(paused()?.hasPrefix("0") == true)
        }
    }

    @Test("413: the push is shrunk and retried once, else it fails")
    func shrinkOnce() async throws {
        try await OutboxHarness.with { h in
            let devices = try await h.register(app: "default", count: 2)
            let (kasiaToken, customToken) = (devices.tokens[0], devices.tokens[1])
            _ = try h.simulator.inject(SimulatorFault(kind: .respond, token: kasiaToken, status: 413, count: 1))
            _ = try h.simulator.inject(SimulatorFault(kind: .respond, token: customToken, status: 413))
            let kasia = KasiaTemplate.render(KasiaEvent(
                kind: .contextualMessage, txID: String(repeating: "ab", count: 32), sender: "kaspa:sender",
                payloadHex: String(repeating: "cd", count: 200), timestamp: 1_700_000_000, daaScore: 42))
            let custom = RenderedPush(
                pushType: .alert, priority: .immediate, collapseID: nil,
                payload: JSONValue.object([.init("aps", .object([.init("alert", .object([
                    .init("title", .string("t")), .init("body", .string(String(repeating: "b", count: 300))),
                ]))]))]).encoded)
            try await h.enqueue(app: "default", rows: [devices.rows[0]], push: kasia)
            try await h.enqueue(app: "default", rows: [devices.rows[1]], push: custom)

            let outbox = Outbox(store: h.store, provider: APNsPushProvider(client: h.client, topic: "com.example.shrink"))
            let running = Task { await outbox.run() }
            await h.wait(upTo: .seconds(10)) {
                let stats = try? await h.store.stats()
                return stats?.deliveries[.sent] == 1 && stats?.deliveries[.failed] == 1
            }
            running.cancel()
            await running.value

            let delivered = try #require(h.simulator.notifications(token: kasiaToken).first)
            let expected = try #require(kasia.shrunk())
            #expect(delivered.payload == String(decoding: expected.payload, as: UTF8.self))
            #expect(delivered.payload.contains(#""payload":null"#))
            #expect(h.simulator.notifications(token: customToken).isEmpty)
            #expect(h.simulator.stats.reasons["PayloadTooLarge"] == 3)
            #expect(try await h.store.stats().failureReasons["PayloadTooLarge"] == 1)
        }
    }
}
