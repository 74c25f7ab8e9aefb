import CoreMetrics
import HeraldDelivery
import HeraldKaspa

extension HeraldMetrics {
    /// The chain source's state, read when `/metrics` is scraped.
    func kaspaSource(_ stats: KaspaSourceStats) {
        Gauge(label: "herald_kaspa_connected", factory: factory).record(stats.connected ? 1 : 0)
        Gauge(label: "herald_kaspa_leader", factory: factory).record(stats.leader ? 1 : 0)
        Gauge(label: "herald_kaspa_last_daa_score", factory: factory).record(Double(stats.lastDaaScore ?? 0))
        Gauge(label: "herald_kaspa_lag_seconds", factory: factory).record(stats.lagSeconds ?? 0)
        Gauge(label: "herald_kaspa_transactions_seen", factory: factory).record(stats.transactionsSeen)
        Gauge(label: "herald_kaspa_transactions_classified", factory: factory).record(stats.transactionsClassified)
        Gauge(label: "herald_kaspa_events_committed", factory: factory).record(stats.eventsCommitted)
        Gauge(label: "herald_kaspa_unattributed_messages", factory: factory).record(stats.unattributedMessages)
        Gauge(label: "herald_kaspa_gaps_total", factory: factory).record(stats.gaps)
        Gauge(label: "herald_kaspa_reconnects", factory: factory).record(stats.reconnects)
    }
}
