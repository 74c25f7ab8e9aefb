import Foundation
public import HeraldDelivery
import Metrics
public import Prometheus

/// `/metrics` renders Prometheus's exposition: the registry lives with the HTTP layer, and the
/// domain records through swift-metrics only.
extension HeraldMetrics {
    /// Prometheus-backed metrics and the registry `/metrics` renders. Its factory also serves
    /// libraries that record through the global `MetricsSystem` (Hummingbird's request metrics),
    /// their dotted OpenTelemetry names turned into Prometheus ones.
    public static func prometheus() -> (HeraldMetrics, PrometheusCollectorRegistry) {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = durationBuckets
        factory.durationHistogramBuckets["http_server_request_duration_seconds"] = fine
        factory.nameAndLabelSanitizer = { name, labels in
            (prometheusNames[name] ?? name.replacingOccurrences(of: ".", with: "_"),
             labels.map { ($0.0.replacingOccurrences(of: ".", with: "_"), $0.1) })
        }
        return (HeraldMetrics(factory: factory), registry)
    }

    /// Hummingbird's metric names as Prometheus names them (units and `_total` in the name).
    static let prometheusNames = [
        "hb.requests": "http_requests_total",
        "hb.request.errors": "http_request_errors_total",
        "http.server.request.duration": "http_server_request_duration_seconds",
        "http.server.active_requests": "http_server_active_requests",
    ]
}
