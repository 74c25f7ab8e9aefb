public import HeraldCore
public import HeraldStore

/// Where the Kaspa chain source commits what it classified (`herald serve`: the event publisher).
public protocol KasiaEventSink: Sendable {
    /// Commits `events` (deduplicated by txid: a txid is never pushed twice) and `checkpoint`
    /// together; returns the deliveries created.
    func commit(_ events: [KasiaEvent], checkpoint: ChainCheckpoint) async throws -> Int
}
