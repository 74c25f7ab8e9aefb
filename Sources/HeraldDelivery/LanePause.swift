import Foundation
import HeraldPushCore

/// A lane's pause: after refused credentials (doubling, with a probe at its end), or while the
/// service asked the app to wait. Owned by the lane's one loop.
struct LanePause {
    enum Permit: Equatable {
        /// Paused: look again after this many seconds.
        case wait(TimeInterval)
        /// The pause is over: send one delivery to see whether the service takes the credentials now.
        case probe
        case open
    }

    /// Refusals since the lane last delivered.
    private var refusals = 0
    private var until: Date?
    /// A wait the service asked for, after which the lane opens fully.
    private var holdUntil: Date?

    var isPaused: Bool { refusals > 0 }

    func permit(now: Date) -> Permit {
        if let holdUntil, holdUntil > now { return .wait(holdUntil.timeIntervalSince(now)) }
        guard isPaused else { return .open }
        if let until, until > now { return .wait(until.timeIntervalSince(now)) }
        return .probe
    }

    /// Counts a refusal and returns how long to pause: the lower bound, doubling, up to the upper.
    mutating func refused(within bounds: ClosedRange<Duration>, now: Date) -> Duration {
        refusals += 1
        let factor = Double(1 << min(refusals - 1, 20))
        let pause = Duration.seconds(min(bounds.upperBound.seconds, bounds.lowerBound.seconds * factor))
        until = now.addingTimeInterval(pause.seconds)
        return pause
    }

    /// Sends nothing before `date`.
    mutating func hold(until date: Date) {
        holdUntil = max(holdUntil ?? date, date)
    }
}
