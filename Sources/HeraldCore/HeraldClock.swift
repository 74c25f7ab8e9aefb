import Foundation

/// The time source of everything that schedules: the wall time that is stored and compared
/// (leases, retries, expirations) and the sleeps between attempts. Tests inject one they move
/// by hand, so nothing waits on real time.
public protocol HeraldClock: Sendable {
    /// The current wall time.
    func now() -> Date
    /// Returns once `duration` has passed on this clock; throws when the task is cancelled.
    func sleep(for duration: Duration) async throws
    /// Calls `action` once `duration` has passed on this clock, unless the timer is cancelled first.
    func timer(after duration: Duration, _ action: @escaping @Sendable () -> Void) -> HeraldTimer
}

extension HeraldClock {
    /// A task that sleeps on this clock, then acts.
    public func timer(after duration: Duration, _ action: @escaping @Sendable () -> Void) -> HeraldTimer {
        let task = Task {
            guard (try? await sleep(for: duration)) != nil else { return }
            action()
        }
        return HeraldTimer { task.cancel() }
    }
}

/// A pending `HeraldClock.timer`.
public struct HeraldTimer: Sendable {
    private let onCancel: @Sendable () -> Void

    public init(cancel: @escaping @Sendable () -> Void) {
        onCancel = cancel
    }

    /// The action will not run (if it has not yet).
    public func cancel() { onCancel() }
}

/// The system's clock.
public struct SystemClock: HeraldClock {
    public init() {}
    public func now() -> Date { Date() }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }

    /// A Dispatch timer: no task to start, wake and cancel per wait (the outbox waits once per event).
    public func timer(after duration: Duration, _ action: @escaping @Sendable () -> Void) -> HeraldTimer {
        let item = CancellableWork(DispatchWorkItem(block: action))
        DispatchQueue.global().asyncAfter(deadline: .now() + duration.dispatchInterval, execute: item.work)
        return HeraldTimer { item.work.cancel() }
    }
}

/// A work item shared with the timer that cancels it (`DispatchWorkItem.cancel` is thread-safe;
/// Linux's Dispatch does not mark the type Sendable).
private final class CancellableWork: @unchecked Sendable {
    let work: DispatchWorkItem
    init(_ work: DispatchWorkItem) { self.work = work }
}

extension Duration {
    /// This duration for Dispatch, in whole nanoseconds (negative ones as zero).
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return .nanoseconds(0) }
        let nanoseconds = min(Double(seconds) * 1e9 + Double(attoseconds) / 1e9, Double(Int.max / 2))
        return .nanoseconds(Int(nanoseconds))
    }
}
