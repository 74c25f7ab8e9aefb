import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldDelivery
import HeraldPushCore
import HeraldServer
import HeraldStore
import HeraldTestSupport
import Logging
import Prometheus
import ServiceLifecycle
import Testing

/// Outbox lanes on an in-memory queue, a scripted provider and a manual clock: isolation, pauses
/// and back-off shown by order and counts, never by seconds.
@Suite("Outbox lanes")
struct OutboxLaneTests {
    static let alert = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(#"{"aps":{"alert":"x"}}"#.utf8))

    /// Outcomes recorded as soon as a batch ends: for tests that read the queue while the manual
    /// clock stands still (batching outcomes has its own test).
    static var recordingAtOnce: OutboxSettings {
        var settings = OutboxSettings()
        settings.outcomeDelay = .zero
        return settings
    }

    static func enqueue(_ queue: InMemoryDeliveryQueue, app: String, devices: [DeviceRecord], clock: ManualClock, id: String = UUID().uuidString) async throws {
        _ = try await queue.enqueue(
            [NewEvent(id: id, app: app, template: "custom", push: alert, expiresAt: clock.now().addingTimeInterval(86_400), deviceRowIDs: devices.map(\.rowID))],
            checkpoint: nil, now: clock.now())
    }

    /// Runs the lanes until `body` returns, then cancels them.
    static func running(_ lanes: [OutboxLane], _ body: () async throws -> Void) async throws {
        let task = Task {
            await withTaskGroup(of: Void.self) { group in
                for lane in lanes { group.addTask { try? await lane.run() } }
            }
        }
        do {
            try await body()
        } catch {
            task.cancel()
            await task.value
            throw error
        }
        task.cancel()
        await task.value
    }

    @Test("one app's stalled push service does not hold back another app's pushes")
    func lanesIsolateApps() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let slowProvider = ScriptedProvider(), fastProvider = ScriptedProvider()
        slowProvider.hold()
        let slow = queue.addDevices(app: "slow", count: 200, now: clock.now())
        let fast = queue.addDevices(app: "fast", count: 200, now: clock.now())
        try await Self.enqueue(queue, app: "slow", devices: slow, clock: clock)
        try await Self.enqueue(queue, app: "fast", devices: fast, clock: clock)
        let lanes = [
            OutboxLane(app: "slow", queue: queue, provider: slowProvider, clock: clock),
            OutboxLane(app: "fast", queue: queue, provider: fastProvider, clock: clock),
        ]
        try await Self.running(lanes) {
            // Every slow push is at its service, unanswered; every fast push is delivered and recorded.
            try await eventually { queue.count(.sent, app: "fast") == 200 && slowProvider.inFlight == 200 }
            #expect(queue.count(.sent, app: "slow") == 0)
            #expect(queue.count(.sending, app: "slow") == 200)
            slowProvider.release()
            try await eventually { queue.count(.sent, app: "slow") == 200 }
        }
        #expect(fastProvider.sent.count == 200)
        #expect(slowProvider.sent.count == 200)
    }

    @Test("in a batch, pushes the service finds too large go again once, smaller, together; too large again, they fail; the rest are sent once")
    func shrinkInBatch() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let provider = ScriptedProvider()
        let devices = queue.addDevices(app: "kasia", count: 30, now: clock.now())
        for device in devices[0..<10] { provider.script(device.token, [.shrinkPayload(reason: "too large"), .delivered]) }
        for device in devices[10..<15] { provider.script(device.token, [.shrinkPayload(reason: "too large")]) }
        let long = String(repeating: "a long message body ", count: 20)
        let push = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(#"{"aps":{"alert":{"body":"\#(long)"}}}"#.utf8))
        _ = try await queue.enqueue(
            [NewEvent(id: "e1", app: "kasia", template: "custom", push: push, expiresAt: clock.now().addingTimeInterval(86_400), deviceRowIDs: devices.map(\.rowID))],
            checkpoint: nil, now: clock.now())
        try await Self.running([OutboxLane(app: "kasia", queue: queue, provider: provider, settings: Self.recordingAtOnce, clock: clock)]) {
            try await eventually { queue.count(.sent) == 25 && queue.count(.failed) == 5 }
        }
        let smaller = push.shrunk()!.payload
        for (n, device) in devices.enumerated() {
            let payloads = provider.sent.filter { $0.token == device.token }.map(\.payload)
            #expect(payloads == (n < 15 ? [push.payload, smaller] : [push.payload]), "device \(n)")
        }
    }

    @Test("refused credentials pause that app only; a probe at the end of each pause; one delivery reopens it")
    func credentialsPause() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let refusedProvider = ScriptedProvider(), fineProvider = ScriptedProvider()
        refusedProvider.answerEverything(.refreshCredentials(reason: "InvalidProviderToken"))
        let refused = queue.addDevices(app: "refused", count: 20, now: clock.now())
        let fine = queue.addDevices(app: "fine", count: 20, now: clock.now())
        try await Self.enqueue(queue, app: "refused", devices: refused, clock: clock)
        try await Self.enqueue(queue, app: "fine", devices: fine, clock: clock)
        let (metrics, registry) = HeraldMetrics.prometheus()
        func paused() -> String? {
            String(decoding: registry.emitToBuffer(), as: UTF8.self).split(separator: "\n")
                .first { $0.hasPrefix(#"herald_app_sends_paused{app="refused",platform="ios"}"#) }.map { String($0.split(separator: " ").last ?? "") }
        }
        var settings = Self.recordingAtOnce
        settings.credentialsPause = .seconds(60) ... .seconds(240)
        let lanes = [
            OutboxLane(app: "refused", queue: queue, provider: refusedProvider, settings: settings, clock: clock, metrics: metrics),
            OutboxLane(app: "fine", queue: queue, provider: fineProvider, settings: settings, clock: clock, metrics: metrics),
        ]
        try await Self.running(lanes) {
            // Both lanes asleep: the fine app delivered everything, the refused app's batch waits out the pause.
            try await eventually { queue.count(.sent, app: "fine") == 20 && refusedProvider.sent.count == 20 && clock.sleepers == 2 }
            #expect(paused().flatMap(Double.init) == 1)
            #expect(queue.rows().filter { $0.device.app == "refused" }.allSatisfy {
                $0.state == .pending && $0.nextAttemptAt == clock.now().addingTimeInterval(60)
            })
            // Half-way through the pause nothing is sent.
            clock.advance(by: 30)
            try await eventually { clock.sleepers == 2 }
            #expect(refusedProvider.sent.count == 20)
            // At its end one delivery probes; refused again, the pause doubles.
            clock.advance(by: 30)
            try await eventually { refusedProvider.sent.count == 21 && clock.sleepers == 2 }
            clock.advance(by: 119)
            try await eventually { clock.sleepers == 2 }
            #expect(refusedProvider.sent.count == 21)
            // The credentials are put right: the next probe is delivered and the lane reopens.
            refusedProvider.answerEverything(.delivered)
            clock.advance(by: 1)
            try await eventually { queue.count(.sent, app: "refused") == 20 }
        }
        // The refused batch, a refused probe, a probe delivered, then the other 19.
        let expectedSends = 20 + 1 + 1 + 19
        #expect(refusedProvider.sent.count == expectedSends)
        #expect(fineProvider.sent.count == 20)
        #expect(paused().flatMap(Double.init) == 0)
    }

    @Test("an app's refused FCM credentials pause its Android lane only: its iOS pushes go on, and the gauge names the platform")
    func pausedPlatformAlone() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let apns = ScriptedProvider(platform: .ios), fcm = ScriptedProvider(platform: .android)
        fcm.answerEverything(.refreshCredentials(reason: "PERMISSION_DENIED"))
        let phones = queue.addDevices(app: "mixed", count: 10, now: clock.now(), platform: .ios)
        let androids = queue.addDevices(app: "mixed", count: 10, now: clock.now(), platform: .android)
        try await Self.enqueue(queue, app: "mixed", devices: phones + androids, clock: clock)
        let (metrics, registry) = HeraldMetrics.prometheus()
        let outbox = Outbox(
            queue: queue, providers: [(app: "mixed", providers: [apns, fcm])], settings: Self.recordingAtOnce, clock: clock, metrics: metrics)
        try await Self.running(outbox.lanes) {
            try await eventually { apns.sent.count == 10 && fcm.sent.count == 10 && queue.count(.sent, app: "mixed") == 10 }
            // Another event while the Android lane is paused: iOS delivers it at once.
            try await Self.enqueue(queue, app: "mixed", devices: phones + androids, clock: clock)
            outbox.notify(app: "mixed")
            try await eventually { apns.sent.count == 20 && queue.count(.sent, app: "mixed") == 20 }
            #expect(fcm.sent.count == 10)
        }
        let text = String(decoding: registry.emitToBuffer(), as: UTF8.self)
        #expect(text.contains(#"herald_app_sends_paused{app="mixed",platform="android"} 1"#), "\(text)")
        #expect(!text.contains(#"herald_app_sends_paused{app="mixed",platform="ios"} 1"#))
        #expect(queue.rows().filter { $0.device.platform == .android }.allSatisfy { $0.state == .pending })
    }

    @Test("a 30-second outage: every delivery arrives afterwards, each retried with back-off, not in a hot loop")
    func outage() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let provider = ScriptedProvider()
        provider.answerEverything(.retry(after: nil, scope: .service, reason: "ServiceUnavailable"))
        let devices = queue.addDevices(app: "default", count: 100, now: clock.now())
        try await Self.enqueue(queue, app: "default", devices: devices, clock: clock)
        // Outcomes recorded at once, so "nothing is sending" means the lane is done with a round.
        var settings = Self.recordingAtOnce
        settings.retryPolicy = RetryPolicy(base: .seconds(1), cap: .seconds(8))
        let lane = OutboxLane(app: "default", queue: queue, provider: provider, settings: settings, clock: clock)
        try await Self.running([lane]) {
            for _ in 0..<30 {
                try await eventually { clock.sleepers == 1 && queue.count(.sending) == 0 }
                clock.advance(by: 1)
            }
            try await eventually { clock.sleepers == 1 && queue.count(.sending) == 0 }
            let refused = provider.sent.count
            // Full-jitter back-off from 1 s capped at 8 s: about 10 tries a delivery in 30 s.
            #expect(refused >= 100 && refused <= 100 * 20, "\(refused) refused attempts")
            #expect(queue.count(.sent) == 0)
            provider.answerEverything(.delivered)
            for _ in 0..<10 where queue.count(.sent) < 100 {
                clock.advance(by: 1)
                try await eventually { clock.sleepers == 1 && queue.count(.sending) == 0 }
            }
            #expect(queue.count(.sent) == 100)
            #expect(provider.sent.count - refused == 100)
        }
    }

    @Test("429 for a token holds back that device's other pushes until its Retry-After; other devices go on")
    func throttledToken() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let provider = ScriptedProvider()
        let devices = queue.addDevices(app: "default", count: 2, now: clock.now())
        let (throttled, other) = (devices[0], devices[1])
        provider.script(throttled.token, [.retry(after: .seconds(60), scope: .token, reason: "TooManyRequests"), .delivered])
        try await Self.enqueue(queue, app: "default", devices: [throttled], clock: clock)
        try await Self.enqueue(queue, app: "default", devices: [throttled], clock: clock)
        try await Self.enqueue(queue, app: "default", devices: [other], clock: clock)
        // One delivery in flight at a time, so the second push to the throttled device is still queued.
        let lane = OutboxLane(app: "default", queue: queue, provider: provider, maximumInFlight: 1, settings: Self.recordingAtOnce, clock: clock)
        try await Self.running([lane]) {
            try await eventually { queue.count(.sent) == 1 && clock.sleepers == 1 }
            #expect(provider.sends(of: throttled.token) == 1)
            #expect(provider.sends(of: other.token) == 1)
            let held = queue.rows().filter { $0.device.rowID == throttled.rowID }
            #expect(held.count == 2 && held.allSatisfy { $0.state == .pending && $0.nextAttemptAt >= clock.now().addingTimeInterval(60) })
            clock.advance(by: 59)
            try await eventually { clock.sleepers == 1 }
            #expect(provider.sends(of: throttled.token) == 1)
            clock.advance(by: 1)
            try await eventually { queue.count(.sent) == 3 }
        }
        #expect(provider.sends(of: throttled.token) == 3)
    }

    @Test("a delivery that never comes back holds only its own flight: the lane goes on sending the app's other pushes")
    func slowDeliveryHoldsOnlyItself() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let provider = ScriptedProvider(platform: .web)
        let devices = queue.addDevices(app: "default", count: 6, now: clock.now(), platform: .web)
        let lane = OutboxLane(app: "default", queue: queue, provider: provider, settings: Self.recordingAtOnce, clock: clock)
        try await Self.running([lane]) {
            // The first push goes to an endpoint that never answers.
            provider.hold()
            try await Self.enqueue(queue, app: "default", devices: [devices[0]], clock: clock)
            lane.notify()
            try await eventually { provider.inFlight == 1 }
            // The others, published while it hangs, are delivered.
            provider.stopHolding()
            for device in devices.dropFirst() {
                try await Self.enqueue(queue, app: "default", devices: [device], clock: clock)
                lane.notify()
            }
            try await eventually { queue.count(.sent) == 5 }
            #expect(provider.inFlight == 1)
            // The hanging one's answer is recorded when it comes.
            provider.release()
            try await eventually { queue.count(.sent) == 6 }
        }
    }

    @Test("graceful shutdown: the lane stops claiming, finishes the batch in flight and records it")
    func gracefulShutdown() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let provider = ScriptedProvider()
        provider.hold()
        let devices = queue.addDevices(app: "default", count: 25, now: clock.now())
        try await Self.enqueue(queue, app: "default", devices: devices, clock: clock)
        let lane = OutboxLane(app: "default", queue: queue, provider: provider, maximumInFlight: 10, clock: clock)
        let group = ServiceGroup(services: [lane], logger: .init(label: "test"))
        let running = Task { try await group.run() }
        try await eventually { provider.inFlight == 10 }
        await group.triggerGracefulShutdown()
        try await eventually { lane.isShuttingDown }
        provider.release()
        try await running.value
        #expect(queue.count(.sent) == 10)
        #expect(queue.count(.sending) == 0)
        #expect(queue.count(.pending) == 15)
        #expect(provider.sent.count == 10)
    }

    @Test("cancelled mid-send, the lane still records the outcomes of what it sent")
    func outcomesSurviveCancellation() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue(refusesCancelledCalls: true)
        let provider = ScriptedProvider()
        provider.hold()
        let devices = queue.addDevices(app: "default", count: 10, now: clock.now())
        try await Self.enqueue(queue, app: "default", devices: devices, clock: clock)
        let lane = OutboxLane(app: "default", queue: queue, provider: provider, clock: clock)
        let running = Task { try await lane.run() }
        try await eventually { provider.inFlight == 10 }
        running.cancel()
        provider.release()
        try await running.value
        #expect(queue.count(.sent) == 10)
        #expect(queue.count(.sending) == 0)
    }

    @Test("a device of a platform without a provider fails with a reason instead of waiting forever")
    func noProviderForPlatform() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let devices = queue.addDevices(app: "default", count: 1, now: clock.now(), platform: .android)
        try await Self.enqueue(queue, app: "default", devices: devices, clock: clock)
        let outbox = Outbox(queue: queue, providers: [(app: "default", providers: [ScriptedProvider()])], clock: clock)
        try await Self.running(outbox.lanes) {
            try await eventually { queue.count(.failed) == 1 }
        }
        #expect(queue.rows().first?.reason == "no push provider for android devices")
    }

    @Test("an open lane takes deliveries straight from the commit, with no claim of its own, also while it sends a batch")
    func directClaims() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let provider = ScriptedProvider()
        let devices = queue.addDevices(app: "default", count: 3, now: clock.now())
        let outbox = Outbox(queue: queue, providers: [(app: "default", providers: [provider])], settings: Self.recordingAtOnce, clock: clock)
        func publish() async throws -> EnqueueResult {
            let event = NewEvent(
                id: UUID().uuidString, app: "default", template: "custom", push: Self.alert, expiresAt: clock.now().addingTimeInterval(86_400),
                deviceRowIDs: devices.map(\.rowID))
            let result = try await queue.enqueue([event], checkpoint: nil, now: clock.now(), claim: outbox.directClaim(apps: ["default"]))
            outbox.enqueued(result, now: clock.now())
            return result
        }
        try await Self.running(outbox.lanes) {
            // The lanes made their first claim (nothing due) and wait.
            try await eventually { outbox.directClaim(apps: ["default"])?.lanes[LaneKey(app: "default", platform: .ios)] == 500 }
            let claimsBefore = queue.claims
            let first = try await publish()
            #expect(first.claimed.count == 3 && first.pending.isEmpty)
            try await eventually { queue.count(.sent) == 3 }
            #expect(queue.claims == claimsBefore, "no claim transaction for deliveries handed over")
            // While the lane sends, the next commit still hands it its deliveries, up to its limit
            // in flight: the lane sends them beside the batch on the wire, and nobody claims them.
            provider.hold()
            _ = try await publish()
            try await eventually { provider.inFlight == 3 }
            #expect(outbox.directClaim(apps: ["default"])?.lanes[LaneKey(app: "default", platform: .ios)] == 500)
            let second = try await publish()
            #expect(second.claimed.count == 3 && second.pending.isEmpty)
            // (Until the lane wakes they wait in its hand-off queue and a commit may hand it 497; it takes
            // them at once, so only where it ends is certain.)
            try await eventually { provider.inFlight == 6 }
            #expect(outbox.directClaim(apps: ["default"])?.lanes[LaneKey(app: "default", platform: .ios)] == 500)
            provider.release()
            try await eventually { queue.count(.sent) == 9 }
            #expect(queue.claims == claimsBefore, "no claim transaction for deliveries handed over")
        }
        #expect(provider.sent.count == 9)
    }

    @Test("one commit leasing to two lanes hands each lane its own deliveries, none to the other")
    func directClaimsToTwoLanes() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let apple = ScriptedProvider(platform: .ios)
        let google = ScriptedProvider(platform: .android)
        let phones = queue.addDevices(app: "default", count: 2, now: clock.now(), platform: .ios)
        let androids = queue.addDevices(app: "default", count: 3, now: clock.now(), platform: .android)
        let outbox = Outbox(queue: queue, providers: [(app: "default", providers: [apple, google])], settings: Self.recordingAtOnce, clock: clock)
        try await Self.running(outbox.lanes) {
            try await eventually { outbox.directClaim(apps: ["default"])?.lanes[LaneKey(app: "default", platform: .android)] == 500 }
            let claimsBefore = queue.claims
            // The devices interleaved, so the commit's leased deliveries alternate between the lanes.
            let rows = [phones[0], androids[0], phones[1], androids[1], androids[2]].map(\.rowID)
            let event = NewEvent(
                id: "both", app: "default", template: "custom", push: Self.alert, expiresAt: clock.now().addingTimeInterval(86_400), deviceRowIDs: rows)
            let result = try await queue.enqueue([event], checkpoint: nil, now: clock.now(), claim: outbox.directClaim(apps: ["default"]))
            #expect(result.claimed.count == 5 && result.pending.isEmpty)
            outbox.enqueued(result, now: clock.now())
            try await eventually { queue.count(.sent) == 5 }
            #expect(queue.claims == claimsBefore, "no claim transaction for deliveries handed over")
        }
        #expect(Set(apple.sent.map(\.token)) == Set(phones.map(\.token)))
        #expect(Set(google.sent.map(\.token)) == Set(androids.map(\.token)))
    }

    @Test("at shutdown, deliveries handed to a lane but not sent go back to the queue due now, not after their lease")
    func handoffsReleasedAtShutdown() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let provider = ScriptedProvider()
        provider.hold()
        let devices = queue.addDevices(app: "default", count: 4, now: clock.now())
        try await Self.enqueue(queue, app: "default", devices: [devices[0]], clock: clock)
        // Busy: its one delivery in flight is its limit.
        let lane = OutboxLane(app: "default", queue: queue, provider: provider, maximumInFlight: 1, clock: clock)
        let group = ServiceGroup(services: [lane], logger: .init(label: "test"))
        let running = Task { try await group.run() }
        try await eventually { provider.inFlight == 1 }
        // A commit leased three more to the lane while it was busy.
        let event = NewEvent(
            id: "late", app: "default", template: "custom", push: Self.alert, expiresAt: clock.now().addingTimeInterval(86_400),
            deviceRowIDs: devices[1...].map(\.rowID))
        let result = try await queue.enqueue(
            [event], checkpoint: nil, now: clock.now(), claim: DirectClaim(lanes: [LaneKey(app: "default", platform: .ios): 500], lease: .seconds(30)))
        lane.handOff(result.claimed, leaseUntil: clock.now().addingTimeInterval(30))
        await group.triggerGracefulShutdown()
        try await eventually { lane.isShuttingDown }
        provider.release()
        try await running.value
        #expect(queue.count(.sent) == 1)
        #expect(queue.count(.sending) == 0)
        let late = queue.rows().filter { $0.eventID == "late" }
        #expect(late.count == 3 && late.allSatisfy { $0.state == .pending && $0.nextAttemptAt <= clock.now() })
    }

    @Test("outcomes of small batches are recorded together, at most the outcome delay late (by the clock); a retry is recorded at once")
    func outcomesBatched() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let provider = ScriptedProvider()
        let devices = queue.addDevices(app: "default", count: 3, now: clock.now())
        provider.script(devices[2].token, [.retry(after: nil, scope: .service, reason: "ServiceUnavailable")])
        let outbox = Outbox(queue: queue, providers: [(app: "default", providers: [provider])], clock: clock)
        try await Self.running(outbox.lanes) {
            for (i, device) in devices[..<2].enumerated() {
                try await Self.enqueue(queue, app: "default", devices: [device], clock: clock)
                outbox.notify(app: "default")
                try await eventually { provider.sent.count == i + 1 }
            }
            // Both went out; neither is recorded while the clock stands still.
            try await eventually { clock.sleepers >= 1 }
            #expect(queue.count(.sending) == 2 && queue.completions == 0)
            clock.advance(by: 0.02)
            try await eventually { queue.count(.sent) == 2 }
            #expect(queue.completions == 1, "one transaction for both outcomes")
            try await Self.enqueue(queue, app: "default", devices: [devices[2]], clock: clock)
            outbox.notify(app: "default")
            try await eventually { queue.count(.pending) == 1 && queue.completions == 2 }
        }
    }
}
