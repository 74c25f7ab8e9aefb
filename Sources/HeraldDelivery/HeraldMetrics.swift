public import CoreMetrics
import Foundation
import HeraldCore
public import HeraldPushCore
import Metrics
import Synchronization

/// Herald's metrics, through swift-metrics. The factory is passed in (no global bootstrap), so
/// `herald serve` and each test have their own registry.
///
/// Each metric is created once per label set and kept (swift-metrics counts creating one per
/// call an antipattern: every call is a lookup in the factory, and some factories allocate).
/// Every label is bounded: apps and templates come from configuration, providers and outcomes
/// are fixed sets, and a push service's reason (which a hostile service chooses) is cut to a
/// short name and to ``maximumReasons`` distinct values, the rest counted as `other`.
public final class HeraldMetrics: Sendable {
    /// Where the metrics go.
    public let factory: any MetricsFactory

    /// Distinct (outcome, reason) pairs kept before further reasons count as `other`.
    public static let maximumReasons = 200

    /// The histograms' buckets: publishing and provider requests take milliseconds, a delivery
    /// (accepted → provider accepted) up to minutes when it waits out a retry.
    public static let durationBuckets: [String: [Duration]] = [
        "herald_publish_duration_seconds": fine,
        "herald_provider_request_duration_seconds": fine,
        "herald_delivery_latency_seconds": fine + [.seconds(30), .seconds(60), .seconds(300), .seconds(900), .seconds(3600)],
    ]
    /// Buckets for what takes milliseconds.
    public static let fine: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(20),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5),
        .seconds(10),
    ]

    private let counters = Mutex<[Key: CoreMetrics.Counter]>([:])
    private let floatingCounters = Mutex<[Key: CoreMetrics.FloatingPointCounter]>([:])
    private let gauges = Mutex<[Key: CoreMetrics.Gauge]>([:])
    private let timers = Mutex<[Key: CoreMetrics.Timer]>([:])
    private let inFlight: CoreMetrics.Meter
    private let collectors = Mutex<[@Sendable (HeraldMetrics) async -> Void]>([])
    /// Cumulative figures read from elsewhere (a client's token count) and the last value passed
    /// on to their counter, so each scrape adds only what is new.
    private let cumulative = Mutex<[Key: Double]>([:])

    /// A Matrix app's notify counters (`matrixNotify`), by the app's configured pattern.
    private struct MatrixCounters {
        var notifications, devices, rejected, deduplicated: CoreMetrics.Counter
    }
    private let matrixCounters = Mutex<[String: MatrixCounters]>([:])

    private struct Key: Hashable {
        var label: String
        var dimensions: [String]
    }

    public init(factory: any MetricsFactory) {
        self.factory = factory
        self.inFlight = CoreMetrics.Meter(label: "herald_deliveries_in_flight", factory: factory)
    }

    // MARK: Handles, created once per label set

    /// The handle for (label, dimensions) from `cache`, made by `make` the first time.
    private func cached<Handle>(
        _ cache: borrowing Mutex<[Key: Handle]>, _ label: String, _ dimensions: KeyValuePairs<String, String>,
        _ make: (String, [(String, String)]) -> Handle
    ) -> Handle {
        // One array for the key (a pair at a time would allocate one per pair): this runs on every push.
        var flat: [String] = []
        flat.reserveCapacity(dimensions.count * 2)
        for (name, value) in dimensions {
            flat.append(name)
            flat.append(value)
        }
        let key = Key(label: label, dimensions: flat)
        return cache.withLock { map in
            if let existing = map[key] { return existing }
            let made = make(label, dimensions.map { ($0.key, $0.value) })
            map[key] = made
            return made
        }
    }

    private func counter(_ label: String, _ dimensions: KeyValuePairs<String, String> = [:]) -> CoreMetrics.Counter {
        cached(counters, label, dimensions) { CoreMetrics.Counter(label: $0, dimensions: $1, factory: factory) }
    }

    private func floatingCounter(_ label: String, _ dimensions: KeyValuePairs<String, String> = [:]) -> CoreMetrics.FloatingPointCounter {
        cached(floatingCounters, label, dimensions) { CoreMetrics.FloatingPointCounter(label: $0, dimensions: $1, factory: factory) }
    }

    private func gauge(_ label: String, _ dimensions: KeyValuePairs<String, String> = [:]) -> CoreMetrics.Gauge {
        cached(gauges, label, dimensions) { CoreMetrics.Gauge(label: $0, dimensions: $1, factory: factory) }
    }

    private func timer(_ label: String, _ dimensions: KeyValuePairs<String, String> = [:]) -> CoreMetrics.Timer {
        cached(timers, label, dimensions) { CoreMetrics.Timer(label: $0, dimensions: $1, preferredDisplayUnit: .seconds, factory: factory) }
    }

    /// ASCII letters, digits and `_-.:` (byte checks: Foundation's `CharacterSet` cost more than
    /// the counter's increment, once per push).
    private static func isReasonByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: ":"): true
        default: false
        }
    }

    /// A reason not counted before as a label value: a short name, while fewer than
    /// ``maximumReasons`` handles exist.
    private func boundedNewReason(_ reason: String) -> String {
        let allowed = reason.utf8.count <= 48 && !reason.isEmpty
            && reason.utf8.allSatisfy(Self.isReasonByte)
        guard allowed, counters.withLock({ $0.count < Self.maximumReasons }) else { return "other" }
        return reason
    }

    // MARK: What Herald records

    func eventsAccepted(template: String, deliveries: Int) {
        counter("herald_events_accepted_total", ["template": template]).increment()
        counter("herald_deliveries_created_total").increment(by: Int64(deliveries))
    }

    /// A publish from its validation to its events durable (the 202 follows at once).
    func published(duration: Duration) {
        timer("herald_publish_duration_seconds").record(duration: duration)
    }

    /// One finished attempt: `outcome` is sent, retry, failed, expired or token_dead; `reason` is the push service's.
    func deliveryAttempt(outcome: String, reason: String) {
        // A pair counted before was allowed then; only a new one is bounded.
        let label = "herald_delivery_attempts_total"
        let known = counters.withLock { $0[Key(label: label, dimensions: ["outcome", outcome, "reason", reason])] }
        (known ?? counter(label, ["outcome": outcome, "reason": boundedNewReason(reason)])).increment()
    }

    /// One Matrix notify's devices for one Matrix app (its configured `app_id` or glob): counted as a
    /// notify, its devices, the pushkeys rejected and the deliveries skipped as repeats.
    func matrixNotify(app: String, devices: Int, rejected: Int, deduplicated: Int) {
        // The four counters of an app found with one lookup: a notify is the hot path.
        let handles = matrixCounters.withLock { map in
            if let existing = map[app] { return existing }
            let made = MatrixCounters(
                notifications: counter("herald_matrix_notifications_total", ["matrix_app": app]),
                devices: counter("herald_matrix_devices_total", ["matrix_app": app]),
                rejected: counter("herald_matrix_rejected_total", ["matrix_app": app]),
                deduplicated: counter("herald_matrix_deduplicated_total", ["matrix_app": app]))
            map[app] = made
            return made
        }
        handles.notifications.increment()
        handles.devices.increment(by: Int64(devices))
        handles.rejected.increment(by: Int64(rejected))
        handles.deduplicated.increment(by: Int64(deduplicated))
    }

    /// Event accepted → the push service accepted this push.
    func delivered(platform: Platform, latency: Duration) {
        timer("herald_delivery_latency_seconds", ["provider": platform.rawValue]).record(duration: latency)
    }

    /// How long a provider took to answer a lane's batch (each push of it counted).
    func providerRequests(platform: Platform, count: Int, duration: Duration) {
        let t = timer("herald_provider_request_duration_seconds", ["provider": platform.rawValue])
        for _ in 0..<count { t.record(duration: duration) }
    }

    /// Deliveries handed to a provider and not yet answered.
    func inFlight(_ change: Int) {
        if change >= 0 { inFlight.increment(by: Double(change)) } else { inFlight.decrement(by: Double(-change)) }
    }

    /// A push service refused an app's credentials even after a refresh: an operator must look.
    func credentialsRefused(platform: Platform) {
        counter("herald_credentials_refused_total", ["platform": platform.rawValue]).increment()
    }

    /// 1 while an app's sends to one push service are paused because it refused the app's credentials.
    func sendsPaused(app: String, platform: Platform, _ paused: Bool) {
        gauge("herald_app_sends_paused", ["app": app, "platform": platform.rawValue]).record(paused ? 1 : 0)
    }

    /// An app's deliveries waiting or being sent, and the age of the oldest, read at scrape time.
    public func queue(app: String, depth: Int, oldestPendingSeconds: Double) {
        gauge("herald_queue_depth", ["app": app]).record(depth)
        gauge("herald_oldest_pending_seconds", ["app": app]).record(oldestPendingSeconds)
    }

    /// Connections open to one push service, over every app, read at scrape time.
    /// Devices of unfinished fan-out jobs not yet expanded into deliveries.
    public func fanoutPending(devices: Int) {
        gauge("herald_fanout_pending_devices").record(devices)
    }

    public func connectionsOpen(platform: Platform, _ count: Int) {
        gauge("herald_provider_connections_open", ["provider": platform.rawValue]).record(count)
    }

    /// The credentials an app's provider has fetched or minted so far (APNs provider tokens, FCM
    /// access tokens), read at scrape time: the counter grows by what is new.
    public func tokenRefreshes(app: String, platform: Platform, stats: ProviderStats) {
        cumulativeCounter("herald_token_refreshes_total", ["app": app, "provider": platform.rawValue], reaches: stats.tokenRefreshes)
    }

    /// The sealing keys an app's devices got so far, read at scrape time: made by a registration,
    /// or by a push that had to pay for it (`herald_sealing_keys_made_total{app, at}`).
    public func sealingKeysMade(app: String, atRegistration: Int, atPush: Int) {
        cumulativeCounter("herald_sealing_keys_made_total", ["app": app, "at": "registration"], reaches: atRegistration)
        cumulativeCounter("herald_sealing_keys_made_total", ["app": app, "at": "push"], reaches: atPush)
    }

    /// What signing and sealing an app's pushes has cost so far, read at scrape time: the pushes
    /// prepared (`herald_signed_pushes_total{app}`) and their CPU time
    /// (`herald_sealing_cpu_seconds_total{app}`); one divided by the other is the cost per push.
    public func sealingCost(app: String, pushes: Int, cpuSeconds: Double) {
        cumulativeCounter("herald_signed_pushes_total", ["app": app], reaches: pushes)
        let added = newSinceLastScrape("herald_sealing_cpu_seconds_total", ["app": app], total: cpuSeconds)
        floatingCounter("herald_sealing_cpu_seconds_total", ["app": app]).increment(by: added)
    }

    /// A counter following a total kept elsewhere and read at scrape time: it grows by what is
    /// new. Created at the first scrape even at 0, so the series exists for dashboards and alerts.
    private func cumulativeCounter(_ label: String, _ dimensions: KeyValuePairs<String, String>, reaches total: Int) {
        counter(label, dimensions).increment(by: Int64(newSinceLastScrape(label, dimensions, total: Double(total))))
    }

    /// How much a total kept elsewhere grew since the last scrape (never negative).
    private func newSinceLastScrape(_ label: String, _ dimensions: KeyValuePairs<String, String>, total: Double) -> Double {
        let key = Key(label: label, dimensions: dimensions.map(\.value))
        return cumulative.withLock { seen in
            let before = seen[key] ?? 0
            seen[key] = max(before, total)
            return max(0, total - before)
        }
    }

    /// A value of the Kaspa chain source, read at scrape time.
    public func kaspa(_ label: String, _ value: Double) {
        gauge(label).record(value)
    }

    // MARK: Scrape-time readings

    /// Adds a reading made each time the metrics are collected (queue depths from the store,
    /// connection counts from the providers).
    public func addCollector(_ collect: @escaping @Sendable (HeraldMetrics) async -> Void) {
        collectors.withLock { $0.append(collect) }
    }

    /// Runs every collector: called before the metrics are rendered.
    public func collect() async {
        for collect in collectors.withLock({ $0 }) { await collect(self) }
    }
}

/// What a provider reports at scrape time.
public struct ProviderStats: Sendable, Hashable {
    /// HTTP/2 connections open to the push service.
    public var connectionsOpen: Int
    /// Credentials fetched or minted since start (APNs provider tokens, FCM access tokens).
    public var tokenRefreshes: Int

    public init(connectionsOpen: Int = 0, tokenRefreshes: Int = 0) {
        self.connectionsOpen = connectionsOpen
        self.tokenRefreshes = tokenRefreshes
    }
}
