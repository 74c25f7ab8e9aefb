import HeraldDelivery
public import HeraldKaspa

extension HeraldMetrics {
    /// The chain source's state, read when `/metrics` is scraped.
    func kaspaSource(_ stats: KaspaSourceStats) {
        kaspa("herald_kaspa_connected", stats.connected ? 1 : 0)
        kaspa("herald_kaspa_leader", stats.leader ? 1 : 0)
        kaspa("herald_kaspa_last_daa_score", Double(stats.lastDaaScore ?? 0))
        kaspa("herald_kaspa_lag_seconds", stats.lagSeconds ?? 0)
        kaspa("herald_kaspa_transactions_seen", Double(stats.transactionsSeen))
        kaspa("herald_kaspa_transactions_classified", Double(stats.transactionsClassified))
        kaspa("herald_kaspa_events_committed", Double(stats.eventsCommitted))
        kaspa("herald_kaspa_unattributed_messages", Double(stats.unattributedMessages))
        kaspa("herald_kaspa_gaps_total", Double(stats.gaps))
        kaspa("herald_kaspa_skipped_blocks_total", Double(stats.skippedBlocks))
        kaspa("herald_kaspa_coin_lookups_total", Double(stats.coinLookups))
        kaspa("herald_kaspa_reconnects", Double(stats.reconnects))
    }
}

/// The chain source commits through the publisher: the same routing and commit as `/v1/events`.
extension EventPublisher: KasiaEventSink {}
