public import Foundation

/// Where a chain source got to; saved with the events it produced.
public struct ChainCheckpoint: Hashable, Sendable {
    public var source: String
    public var blockHash: String
    public var daaScore: UInt64

    public init(source: String, blockHash: String, daaScore: UInt64) {
        self.source = source
        self.blockHash = blockHash
        self.daaScore = daaScore
    }
}

/// A chain block a chain source passed, kept as a place to resume from should the node forget
/// the checkpoint (pruned, reorged out, or another node): one every few minutes, within the
/// maximum age.
public struct ChainAnchor: Hashable, Sendable {
    public var source: String
    public var blockHash: String
    public var daaScore: UInt64
    /// The block's time.
    public var time: Date

    public init(source: String, blockHash: String, daaScore: UInt64, time: Date) {
        (self.source, self.blockHash, self.daaScore, self.time) = (source, blockHash, daaScore, time)
    }
}

/// Where a chain source got to (written by `DeliveryQueue.enqueue` with the events it produced).
public protocol ChainCheckpoints: Sendable {
    func checkpoint(source: String) async throws -> ChainCheckpoint?
    /// The source's anchors, newest first.
    func anchors(source: String) async throws -> [ChainAnchor]
    /// Keeps `anchor` and forgets the source's anchors older than `keepingAfter`.
    func addAnchor(_ anchor: ChainAnchor, keepingAfter: Date) async throws
}

/// One holder at a time of a named role across every instance on the database.
public protocol Leadership: Sendable {
    /// Runs `body` only while this process holds the named leadership, waiting (polling every
    /// `poll`) until it does: PostgreSQL takes a session advisory lock on one connection, which
    /// the server releases when the holder dies; SQLite (one process per file) runs `body` at once.
    func withLeadership(_ name: String, poll: Duration, _ body: @escaping @Sendable () async -> Void) async throws
}
