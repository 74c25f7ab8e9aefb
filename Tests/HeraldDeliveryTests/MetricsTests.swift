import CoreMetrics
import Foundation
import HeraldCore
@testable import HeraldDelivery
import HeraldStore
import HeraldTestSupport
import MetricsTestKit
import Synchronization
import Testing

/// What an operator's dashboard reads, recorded through swift-metrics' test kit: the lane's
/// in-flight gauge, the provider's request duration and the delivery latency by the injected
/// clock, attempts by outcome and reason; each handle made once; a hostile reason bounded.
@Suite("Delivery metrics")
struct MetricsTests {
    @Test("a held batch is in flight; once answered, latency and provider duration are the clock's time, and attempts count by outcome")
    func deliveryMetrics() async throws {
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let provider = ScriptedProvider()
        let test = TestMetrics()
        let metrics = HeraldMetrics(factory: test)
        let devices = queue.addDevices(app: "default", count: 10, now: clock.now())
        provider.script(devices[9].token, [.failed(reason: "BadTopic")])
        // Accepted 5 s before the lane claims them.
        try await OutboxLaneTests.enqueue(queue, app: "default", devices: devices, clock: clock)
        clock.advance(by: 5)
        provider.hold()
        let lane = OutboxLane(app: "default", queue: queue, provider: provider, settings: OutboxLaneTests.recordingAtOnce, clock: clock, metrics: metrics)
        try await OutboxLaneTests.running([lane]) {
            try await eventually { provider.inFlight == 10 }
            #expect(test.meters(label: "herald_deliveries_in_flight").first?.lastValue == 10)
            // The push service takes 2 s to answer.
            clock.advance(by: 2)
            provider.release()
            try await eventually { queue.count(.sent) == 9 && queue.count(.failed) == 1 }
        }
        #expect(try test.expectMeter("herald_deliveries_in_flight").lastValue == 0)
        let latency = try test.expectTimer("herald_delivery_latency_seconds", [("provider", "ios")])
        // Accepted → provider accepted (7 s), for the 9 delivered; the provider's answer took 2 s, for all 10.
        #expect(latency.values.count == 9 && latency.values.allSatisfy { abs($0 - 7_000_000_000) < 1_000_000 }, "\(latency.values)")
        let request = try test.expectTimer("herald_provider_request_duration_seconds", [("provider", "ios")])
        #expect(request.values.count == 10 && request.values.allSatisfy { abs($0 - 2_000_000_000) < 1_000_000 }, "\(request.values)")
        #expect(try test.expectCounter("herald_delivery_attempts_total", [("outcome", "sent"), ("reason", "accepted")]).totalValue == 9)
        #expect(try test.expectCounter("herald_delivery_attempts_total", [("outcome", "failed"), ("reason", "BadTopic")]).totalValue == 1)
    }

    @Test("each label set's handle is made once, however many pushes; a push service's invented reasons become 'other'")
    func handlesOnceAndBoundedReasons() async throws {
        let factory = CountingFactory()
        let metrics = HeraldMetrics(factory: factory)
        let clock = ManualClock()
        let queue = InMemoryDeliveryQueue()
        let provider = ScriptedProvider()
        let devices = queue.addDevices(app: "default", count: 60, now: clock.now())
        // A hostile service: a long reason, one with markup, and 40 distinct made-up ones.
        provider.script(devices[0].token, [.failed(reason: String(repeating: "A", count: 200))])
        provider.script(devices[1].token, [.failed(reason: "bad\"}\nherald_fake 1")])
        for i in 2..<42 { provider.script(devices[i].token, [.failed(reason: "Invented\(i)")]) }
        try await OutboxLaneTests.enqueue(queue, app: "default", devices: devices, clock: clock)
        let lane = OutboxLane(app: "default", queue: queue, provider: provider, settings: OutboxLaneTests.recordingAtOnce, clock: clock, metrics: metrics)
        try await OutboxLaneTests.running([lane]) {
            try await eventually { queue.count(.sent) == 18 && queue.count(.failed) == 42 }
        }
        // Three more events to the 18 that deliver: still one handle for ("sent", "accepted").
        for _ in 0..<3 { try await OutboxLaneTests.enqueue(queue, app: "default", devices: Array(devices[42...]), clock: clock) }
        let again = OutboxLane(app: "default", queue: queue, provider: provider, settings: OutboxLaneTests.recordingAtOnce, clock: clock, metrics: metrics)
        try await OutboxLaneTests.running([again]) { try await eventually { queue.count(.sent) == 18 * 4 } }
        let attempts = factory.made.filter { $0.label == "herald_delivery_attempts_total" }
        #expect(attempts.filter { $0.dimensions == ["outcome", "sent", "reason", "accepted"] }.count == 1)
        #expect(Set(attempts.map(\.dimensions)).count == attempts.count, "no label set made twice")
        let reasons = Set(attempts.map { $0.dimensions[3] })
        #expect(reasons.contains("other"))
        #expect(!reasons.contains { $0.count > 48 || $0.contains("\"") || $0.contains("\n") })
        #expect(factory.made.filter { $0.label == "herald_delivery_latency_seconds" }.count == 1)
        #expect(factory.test.counterTotal(label: "herald_delivery_attempts_total") == 60 + 18 * 3)
    }

    @Test("bounded reasons: past the limit of label sets, a new reason counts as 'other' and the set stops growing")
    func reasonLimit() {
        let factory = CountingFactory()
        let metrics = HeraldMetrics(factory: factory)
        for i in 0..<(HeraldMetrics.maximumReasons + 50) {
            metrics.deliveryAttempt(outcome: "failed", reason: "Reason\(i)")
        }
        let sets = Set(factory.made.filter { $0.label == "herald_delivery_attempts_total" }.map(\.dimensions))
        #expect(sets.count <= HeraldMetrics.maximumReasons + 1)
        #expect(factory.test.counterTotal(label: "herald_delivery_attempts_total", dimensions: [("outcome", "failed"), ("reason", "other")]) >= 50)
    }
}

/// Test metrics that also list every handle made, with its labels.
final class CountingFactory: MetricsFactory {
    let test = TestMetrics()
    private let log = Mutex<[(label: String, dimensions: [String])]>([])
    var made: [(label: String, dimensions: [String])] { log.withLock { $0 } }

    private func note(_ label: String, _ dimensions: [(String, String)]) {
        log.withLock { $0.append((label, dimensions.flatMap { [$0.0, $0.1] })) }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        note(label, dimensions)
        return test.makeCounter(label: label, dimensions: dimensions)
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        note(label, dimensions)
        return test.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        note(label, dimensions)
        return test.makeMeter(label: label, dimensions: dimensions)
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        note(label, dimensions)
        return test.makeTimer(label: label, dimensions: dimensions)
    }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyMeter(_ handler: any MeterHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}
}

@Suite("Retention batches")
struct RetentionBatchTests {
    @Test("a batch's size follows the time the last one held the writer: halved at most when slow, doubled at most when quick, within bounds")
    func batchSizing() {
        let target = Duration.milliseconds(20)
        #expect(RetentionPruner.nextLimit(after: 1_000, took: .milliseconds(40), target: target) == 500)
        #expect(RetentionPruner.nextLimit(after: 1_000, took: .milliseconds(400), target: target) == 500)
        #expect(RetentionPruner.nextLimit(after: 1_000, took: .milliseconds(10), target: target) == 2_000)
        #expect(RetentionPruner.nextLimit(after: 1_000, took: .milliseconds(16), target: target) == 1_250)
        #expect(RetentionPruner.nextLimit(after: 15_000, took: .milliseconds(1), target: target) == RetentionPruner.batchRows.maximum)
        #expect(RetentionPruner.nextLimit(after: 60, took: .seconds(1), target: target) == RetentionPruner.batchRows.minimum)
    }
}
