import Synchronization

/// When the database last answered a call through the pool.
final class DatabaseProgress: Sendable {
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    func answered() { last.withLock { $0 = .now } }

    /// Whether a call had its answer within the last `interval`.
    func answered(within interval: Duration) -> Bool {
        last.withLock { $0.map { ContinuousClock.now - $0 < interval } ?? false }
    }
}
