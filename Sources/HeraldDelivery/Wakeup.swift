import HeraldCore
import Synchronization

/// A signal a lane sleeps on: it wakes the waiter, and a signal with no waiter is kept for the
/// next wait.
final class Wakeup: Sendable {
    private struct State {
        var pending = false
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Waits whose timeout came before they started waiting.
        var expired: Set<Int> = []
        /// Waits begun and not yet returned (a timer that fires later leaves nothing behind).
        var active: Set<Int> = []
    }
    private let state = Mutex(State())

    func signal() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let id = s.waiters.keys.min() else {
                s.pending = true
                return nil
            }
            return s.waiters.removeValue(forKey: id)
        }
        waiter?.resume()
    }

    /// Returns on a signal, after `timeout` on `clock` (waking nobody else; nil: no timeout), or
    /// when the task is cancelled.
    func wait(timeout: Duration?, clock: any HeraldClock) async {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            s.active.insert(s.nextID)
            return s.nextID
        }
        // A timer rather than a sleeping child task: no task group and no tasks to start per wait.
        let timer = timeout.map { clock.timer(after: $0) { self.stopWaiting(id: id) } }
        await withTaskCancellationHandler {
            await wait(id: id)
        } onCancel: {
            self.stopWaiting(id: id)
        }
        timer?.cancel()
        state.withLock { s in
            s.expired.remove(id)
            s.active.remove(id)
        }
    }

    private func wait(id: Int) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.expired.remove(id) != nil { return true }
                if s.pending {
                    s.pending = false
                    return true
                }
                s.waiters[id] = c
                return false
            }
            if now { c.resume() }
        }
    }

    private func stopWaiting(id: Int) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            if let waiter = s.waiters.removeValue(forKey: id) { return waiter }
            // Not waiting yet, or already woken by a signal: a late start must not wait.
            if s.active.contains(id) { s.expired.insert(id) }
            return nil
        }
        waiter?.resume()
    }
}
