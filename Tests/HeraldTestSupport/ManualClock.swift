public import Foundation
public import HeraldCore
import Synchronization

/// A `HeraldClock` that moves only when a test advances it: sleepers wake when their deadline is
/// reached, so code that waits minutes runs in milliseconds and in a fixed order.
public final class ManualClock: HeraldClock {
    private struct Sleeper {
        var deadline: Date
        var continuation: CheckedContinuation<Void, any Error>
    }
    private struct Timer {
        var deadline: Date
        var action: @Sendable () -> Void
    }
    private struct State {
        var now: Date
        var nextID = 0
        var sleepers: [Int: Sleeper] = [:]
        var timers: [Int: Timer] = [:]
        /// Sleeps cancelled before they were registered.
        var cancelled: Set<Int> = []
    }
    private let state: Mutex<State>

    public init(now: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        state = Mutex(State(now: now))
    }

    public func now() -> Date { state.withLock { $0.now } }

    /// How many tasks are asleep on this clock now, and timers armed on it.
    public var sleepers: Int { state.withLock { $0.sleepers.count + $0.timers.count } }

    /// The earliest deadline of a sleeper or a timer, if any.
    public var nextDeadline: Date? {
        state.withLock { s in (s.sleepers.values.map(\.deadline) + s.timers.values.map(\.deadline)).min() }
    }

    /// Armed at once, its deadline fixed when armed, as `SystemClock`'s are: a timer that a
    /// task armed and the clock then advanced past fires on that advance, not one later.
    public func timer(after duration: Duration, _ action: @escaping @Sendable () -> Void) -> HeraldTimer {
        let armed = state.withLock { s -> Int? in
            let deadline = s.now.addingTimeInterval(duration.inSeconds)
            if deadline <= s.now { return nil }
            s.nextID += 1
            s.timers[s.nextID] = Timer(deadline: deadline, action: action)
            return s.nextID
        }
        guard let id = armed else {
            action()
            return HeraldTimer {}
        }
        return HeraldTimer { [self] in _ = state.withLock { $0.timers.removeValue(forKey: id) } }
    }

    public func sleep(for duration: Duration) async throws {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let resume: Result<Void, any Error>? = state.withLock { s in
                    if s.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    let deadline = s.now.addingTimeInterval(duration.inSeconds)
                    if deadline <= s.now { return .success(()) }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let resume { continuation.resume(with: resume) }
            }
        } onCancel: {
            let sleeper = state.withLock { s -> Sleeper? in
                if let sleeper = s.sleepers.removeValue(forKey: id) { return sleeper }
                s.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
        _ = state.withLock { $0.cancelled.remove(id) }
    }

    /// Moves the clock forward and wakes every sleeper whose deadline has come.
    public func advance(by seconds: TimeInterval) {
        let (due, fired) = state.withLock { s -> ([Sleeper], [Timer]) in
            s.now = s.now.addingTimeInterval(seconds)
            let ids = s.sleepers.filter { $0.value.deadline <= s.now }.map(\.key)
            let timerIDs = s.timers.filter { $0.value.deadline <= s.now }.map(\.key)
            return (ids.compactMap { s.sleepers.removeValue(forKey: $0) }, timerIDs.compactMap { s.timers.removeValue(forKey: $0) })
        }
        for sleeper in due { sleeper.continuation.resume() }
        for timer in fired.sorted(by: { $0.deadline < $1.deadline }) { timer.action() }
    }
}

extension Duration {
    fileprivate var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
