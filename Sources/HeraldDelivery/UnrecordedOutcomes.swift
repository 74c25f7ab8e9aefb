import Foundation
import HeraldPushCore
import HeraldStore

/// Outcomes a lane has not recorded yet, and when they must be.
struct UnrecordedOutcomes {
    private var outcomes: [DeliveryOutcome] = []
    /// When the oldest must be recorded.
    private(set) var due: Date?

    var count: Int { outcomes.count }
    var isEmpty: Bool { outcomes.isEmpty }

    mutating func add(_ new: [DeliveryOutcome], now: Date, delay: Duration) {
        guard !new.isEmpty else { return }
        if outcomes.isEmpty { due = now.addingTimeInterval(delay.seconds) }
        outcomes += new
    }

    mutating func take() -> [DeliveryOutcome] {
        defer { outcomes = []; due = nil }
        return outcomes
    }

    /// `timeout`, shortened so a wait ends when the outcomes are due.
    func timeout(_ timeout: Duration, now: Date) -> Duration {
        guard let due else { return timeout }
        return min(timeout, .seconds(max(0, due.timeIntervalSince(now))))
    }
}
