import CoreMetrics
import HeraldKaspa
import Prometheus

/// Herald's metrics, through swift-metrics. The factory is passed in (no global bootstrap), so
/// `herald serve` and each test have their own registry.
public struct HeraldMetrics: Sendable {
    let factory: any MetricsFactory

    public init(factory: any MetricsFactory) {
        self.factory = factory
    }

    /// Prometheus-backed metrics and the registry `/metrics` renders.
    public static func prometheus() -> (HeraldMetrics, PrometheusCollectorRegistry) {
        let registry = PrometheusCollectorRegistry()
        return (HeraldMetrics(factory: PrometheusMetricsFactory(registry: registry)), registry)
    }

    func eventsAccepted(template: String, deliveries: Int) {
        Counter(label: "herald_events_accepted_total", dimensions: [("template", template)], factory: factory).increment()
        Counter(label: "herald_deliveries_created_total", factory: factory).increment(by: Int64(deliveries))
    }

    /// One finished attempt: `outcome` is sent, retry, failed, expired or token_dead; `reason` is APNs's.
    func deliveryAttempt(outcome: String, reason: String) {
        Counter(label: "herald_delivery_attempts_total", dimensions: [("outcome", outcome), ("reason", reason)], factory: factory)
            .increment()
    }

    /// APNs refused the provider token even after a refresh: an operator must look (SPEC §2's alert).
    func credentialsRefused() {
        Counter(label: "herald_apns_credentials_refused_total", factory: factory).increment()
    }

    /// 1 while an app's sends are paused because APNs refused its credentials.
    func sendsPaused(app: String, _ paused: Bool) {
        Gauge(label: "herald_app_sends_paused", dimensions: [("app", app)], factory: factory).record(paused ? 1 : 0)
    }

    /// The chain source's state, read when `/metrics` is scraped.
    func kaspaSource(_ stats: KaspaSourceStats) {
        Gauge(label: "herald_kaspa_connected", factory: factory).record(stats.connected ? 1 : 0)
        Gauge(label: "herald_kaspa_leader", factory: factory).record(stats.leader ? 1 : 0)
        Gauge(label: "herald_kaspa_last_daa_score", factory: factory).record(Double(stats.lastDaaScore ?? 0))
        Gauge(label: "herald_kaspa_lag_seconds", factory: factory).record(stats.lagSeconds ?? 0)
        Gauge(label: "herald_kaspa_transactions_seen", factory: factory).record(stats.transactionsSeen)
        Gauge(label: "herald_kaspa_transactions_classified", factory: factory).record(stats.transactionsClassified)
        Gauge(label: "herald_kaspa_events_committed", factory: factory).record(stats.eventsCommitted)
        Gauge(label: "herald_kaspa_reconnects", factory: factory).record(stats.reconnects)
    }
}
