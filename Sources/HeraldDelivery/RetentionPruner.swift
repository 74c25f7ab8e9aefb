import Foundation
public import HeraldCore
import HeraldPushCore
public import HeraldStore
public import Logging
public import ServiceLifecycle

/// Deletes events whose deliveries have all finished (sent, failed, expired, dropped), with those
/// deliveries, once older than the retention (`HERALD_RETENTION_HOURS`, default 72): a pass every
/// `interval`, in batches sized so that each holds the store's writer about `batchTarget`, with
/// a pause after each at least as long. Each pass first folds the store's counters.
public struct RetentionPruner: Service, Sendable {
    public let store: any Retention
    /// Nil keeps every event (the passes only fold the counters).
    public let retention: Duration?
    public let interval: Duration
    /// How long one batch should hold the writer: the batch size follows what the last one took.
    public let batchTarget: Duration
    public let clock: any HeraldClock
    public let logger: Logger
    /// The rows a batch deletes, at least and at most, and to begin with.
    public static let batchRows = (minimum: 50, maximum: 20_000, first: 1_000)

    public init(
        store: any Retention, retention: Duration?, interval: Duration = .seconds(60), batchTarget: Duration = .milliseconds(10),
        clock: any HeraldClock = SystemClock(), logger: Logger = Logger(label: "herald.retention")
    ) {
        self.store = store
        self.retention = retention
        self.interval = interval
        self.batchTarget = batchTarget
        self.clock = clock
        self.logger = logger
    }

    /// What a pass deleted, and in how many batches.
    public struct Pass: Hashable, Sendable {
        public var events = 0
        public var deliveries = 0
        public var batches = 0
    }

    /// One pass over everything older than the retention; each batch its own transaction, so
    /// publishes and outcomes get the writer between them.
    public func once() async throws -> Pass {
        var pass = Pass()
        try await store.compactCounters()
        _ = try await store.pruneDeadTokens(deadBefore: clock.now().addingTimeInterval(-deadTokenMemory))
        // A dismissal rides along in sealed alerts for a day; a marker's digest outlives its window.
        _ = try await store.pruneDismissals(markedBefore: clock.now().addingTimeInterval(-86_400), now: clock.now())
        guard let retention else { return pass }
        let before = clock.now().addingTimeInterval(-retention.seconds)
        var cursor: PruneCursor?
        var limit = Self.batchRows.first
        repeat {
            let started = ContinuousClock.now
            let batch = try await store.pruneFinished(createdBefore: before, after: cursor, limit: limit)
            let took = ContinuousClock.now - started
            pass.events += batch.events
            pass.deliveries += batch.deliveries
            pass.batches += 1
            limit = Self.nextLimit(after: limit, took: took, target: batchTarget)
            cursor = batch.next
            // The writer is left alone at least as long as the batch held it: publishes queued
            // behind a batch go first, and the next batch does not meet them in the queue.
            if cursor != nil { try await clock.sleep(for: max(took, batchTarget)) }
        } while cursor != nil && !Task.isCancelled
        return pass
    }

    /// The next batch's rows: scaled by how the last one's time compares with the target (at most
    /// doubled, at least halved, within `batchRows`).
    static func nextLimit(after limit: Int, took: Duration, target: Duration) -> Int {
        let ratio = target.seconds / max(took.seconds, 0.000_1)
        let scaled = Double(limit) * min(2, max(0.5, ratio))
        return Int(min(Double(batchRows.maximum), max(Double(batchRows.minimum), scaled)))
    }

    /// A pass at start, then every `interval`, until a graceful shutdown or cancellation.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var first = true
            while !Task.isCancelled {
                do {
                    if !first { try await clock.sleep(for: interval) }
                    first = false
                    let pass = try await once()
                    if pass.deliveries > 0 || pass.events > 0 {
                        logger.info("finished deliveries past the retention deleted", metadata: [
                            "events": "\(pass.events)", "deliveries": "\(pass.deliveries)", "batches": "\(pass.batches)",
                            "retention_hours": "\(Int((retention?.seconds ?? 0) / 3600))",
                        ])
                    }
                } catch is CancellationError {
                    return
                } catch {
                    logger.error("retention pass failed", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
