import Foundation
import HeraldCore
import Synchronization
import Testing

/// The system clock's timers, which every outbox lane arms and cancels once per event. Only the
/// order of what fires is asserted, never how long it took.
@Suite("SystemClock timers")
struct SystemClockTests {
    /// Records which timers fired, in order, and lets a test await the last one.
    final class Fired: Sendable {
        private let names = Mutex<[String]>([])
        private let done = Mutex<CheckedContinuation<Void, Never>?>(nil)
        func record(_ name: String) { names.withLock { $0.append(name) } }
        var order: [String] { names.withLock { $0 } }
        func finish(_ name: String) {
            record(name)
            done.withLock { $0?.resume(); $0 = nil }
        }
        func wait(_ arm: () -> Void) async {
            await withCheckedContinuation { c in
                done.withLock { $0 = c }
                arm()
            }
        }
    }

    @Test("timers fire in deadline order, an earlier one armed after a later one included")
    func order() async {
        let clock = SystemClock()
        let fired = Fired()
        await fired.wait {
            _ = clock.timer(after: .milliseconds(300)) { fired.finish("late") }
            _ = clock.timer(after: .milliseconds(150)) { fired.record("middle") }
            _ = clock.timer(after: .milliseconds(20)) { fired.record("early") }
        }
        #expect(fired.order == ["early", "middle", "late"])
    }

    @Test("a cancelled timer never fires, and the timers armed after it still do")
    func cancel() async {
        let clock = SystemClock()
        let fired = Fired()
        await fired.wait {
            let cancelled = clock.timer(after: .milliseconds(30)) { fired.record("cancelled") }
            cancelled.cancel()
            _ = clock.timer(after: .milliseconds(120)) { fired.finish("kept") }
        }
        #expect(fired.order == ["kept"])
    }

    @Test("a timer armed after the timer thread went idle still fires")
    func afterIdle() async throws {
        let clock = SystemClock()
        let fired = Fired()
        await fired.wait { _ = clock.timer(after: .milliseconds(1)) { fired.finish("first") } }
        // Past the thread's linger, so the next timer starts a new one.
        try await Task.sleep(for: .milliseconds(1_200))
        await fired.wait { _ = clock.timer(after: .zero) { fired.finish("second") } }
        #expect(fired.order == ["first", "second"])
    }
}
