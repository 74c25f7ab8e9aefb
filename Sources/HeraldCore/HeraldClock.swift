import Foundation

/// The time source of everything that schedules: the wall time that is stored and compared
/// (leases, retries, expirations) and the sleeps between attempts. Tests inject one they move
/// by hand, so nothing waits on real time.
public protocol HeraldClock: Sendable {
    /// The current wall time.
    func now() -> Date
    /// Returns once `duration` has passed on this clock; throws when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// The system's clock.
public struct SystemClock: HeraldClock {
    public init() {}
    public func now() -> Date { Date() }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}
