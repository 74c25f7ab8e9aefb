import CoreMetrics
import HeraldCore
import Prometheus

/// Herald's metrics, through swift-metrics. The factory is passed in (no global bootstrap), so
/// `herald serve` and each test have their own registry.
public struct HeraldMetrics: Sendable {
    /// Where the metrics go.
    public let factory: any MetricsFactory

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

    /// One finished attempt: `outcome` is sent, retry, failed, expired or token_dead; `reason` is the push service's.
    func deliveryAttempt(outcome: String, reason: String) {
        Counter(label: "herald_delivery_attempts_total", dimensions: [("outcome", outcome), ("reason", reason)], factory: factory)
            .increment()
    }

    /// A push service refused an app's credentials even after a refresh: an operator must look.
    func credentialsRefused(platform: Platform) {
        Counter(label: "herald_credentials_refused_total", dimensions: [("platform", platform.rawValue)], factory: factory).increment()
    }

    /// 1 while an app's sends to one push service are paused because it refused the app's credentials.
    func sendsPaused(app: String, platform: Platform, _ paused: Bool) {
        Gauge(label: "herald_app_sends_paused", dimensions: [("app", app), ("platform", platform.rawValue)], factory: factory)
            .record(paused ? 1 : 0)
    }
}
