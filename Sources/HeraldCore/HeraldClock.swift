public import Foundation
import HeraldPushCore

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
    /// A task that sleeps on this clock, then acts. The deadline is fixed when the timer is
    /// armed: the task may start after the clock has moved.
    public func timer(after duration: Duration, _ action: @escaping @Sendable () -> Void) -> HeraldTimer {
        let deadline = now().addingTimeInterval(duration.seconds)
        let task = Task {
            let left = deadline.timeIntervalSince(now())
            if left > 0 { guard (try? await sleep(for: .seconds(left))) != nil else { return } }
            guard !Task.isCancelled else { return }
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
    private let timers = DeadlineThread()

    public init() {}
    public func now() -> Date { Date() }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }

    /// A deadline on a thread of this clock's own: the outbox arms a timer per wait and cancels
    /// it at once, per event. A Dispatch timer woke Dispatch's timer thread to arm it and a worker
    /// when it fired, cancelled or not; here a later deadline and a cancel wake nobody.
    public func timer(after duration: Duration, _ action: @escaping @Sendable () -> Void) -> HeraldTimer {
        timers.schedule(after: duration, action)
    }
}

/// Runs actions at deadlines on one thread that sleeps until the earliest (`CLOCK_MONOTONIC`).
/// Arming a deadline later than the one it sleeps for, or cancelling, only changes the table:
/// the thread finds out when it wakes. It starts with the first deadline and ends a second after
/// the last.
final class DeadlineThread: @unchecked Sendable {
    private struct Entry {
        var deadline: UInt64
        var action: @Sendable () -> Void
    }
    // Guarded by `mutex`.
    private var entries: [Int: Entry] = [:]
    private var nextID = 0
    private var running = false
    /// The deadline the thread sleeps until (nil: it is not sleeping on one).
    private var sleepingUntil: UInt64?
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    func schedule(after duration: Duration, _ action: @escaping @Sendable () -> Void) -> HeraldTimer {
        // Negative as zero, at most about three years.
        let delay = UInt64(min(max(duration.seconds, 0), 1e8) * 1e9)
        let deadline = Self.monotonicNanoseconds() + delay
        pthread_mutex_lock(mutex)
        nextID += 1
        let id = nextID
        entries[id] = Entry(deadline: deadline, action: action)
        if !running {
            running = true
            // The thread holds the table until no deadline is left.
            Thread { self.run() }.start()
        } else if let until = sleepingUntil, deadline < until {
            pthread_cond_signal(condition)
        }
        pthread_mutex_unlock(mutex)
        return HeraldTimer { [weak self] in self?.cancel(id) }
    }

    private func cancel(_ id: Int) {
        pthread_mutex_lock(mutex)
        entries[id] = nil
        pthread_mutex_unlock(mutex)
    }

    private static let linger: UInt64 = 1_000_000_000

    private func run() {
        Thread.current.name = "herald-timers"
        var idleSince: UInt64?
        pthread_mutex_lock(mutex)
        while true {
            let now = Self.monotonicNanoseconds()
            let due = entries.filter { $0.value.deadline <= now }
            if !due.isEmpty {
                for id in due.keys { entries[id] = nil }
                pthread_mutex_unlock(mutex)
                for (_, entry) in due.sorted(by: { $0.value.deadline < $1.value.deadline }) { entry.action() }
                pthread_mutex_lock(mutex)
                continue
            }
            let until: UInt64
            if let next = entries.values.map(\.deadline).min() {
                idleSince = nil
                until = next
            } else {
                // With nothing armed it lingers a second: the outbox arms again within milliseconds.
                let since = idleSince ?? now
                guard now < since + Self.linger else { break }
                idleSince = since
                until = since + Self.linger
            }
            sleepingUntil = until
            var wake = timespec(tv_sec: Int(until / 1_000_000_000), tv_nsec: Int(until % 1_000_000_000))
            pthread_cond_timedwait(condition, mutex, &wake)
            sleepingUntil = nil
        }
        running = false
        pthread_mutex_unlock(mutex)
    }
}
