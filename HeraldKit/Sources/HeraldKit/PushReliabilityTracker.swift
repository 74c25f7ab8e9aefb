public import Foundation

/// Scores whether pushes arrive, by matching transaction ids the app learns of another way
/// (its UTXO subscription, a sync) against the pushes it receives (KaChat's reliability rules):
/// a transaction with no push within the grace period is a miss; three consecutive misses make
/// the channel unreliable (re-register and catch up now); the first hit makes it reliable again;
/// while reliable, catch-ups on app-active or restart are debounced to one per 10 minutes.
public struct PushReliabilityTracker: Sendable {
    public enum State: String, Hashable, Sendable {
        /// Nothing matched or missed yet.
        case unknown
        case reliable
        case unreliable
    }

    /// What the app should do now.
    public enum Action: Hashable, Sendable {
        /// Register the device with Herald again (its token or watch set may be stale).
        case reregister
        /// Fetch what was missed (catch-up sync).
        case catchUp
    }

    /// Why the app asks whether to catch up.
    public enum CatchUpReason: Hashable, Sendable {
        case appActive, restart
    }

    public let clock: any WallClock
    public let grace: TimeInterval
    public let missesToUnreliable: Int
    public let catchUpDebounce: TimeInterval

    public private(set) var state: State = .unknown
    public private(set) var consecutiveMisses = 0
    /// Transactions seen on chain, waiting for their push, with when they were seen.
    public private(set) var awaitingPush: [String: Date] = [:]
    /// Pushes received before the app saw their transaction another way.
    private var pushedEarly: [String: Date] = [:]
    private var lastCatchUp: Date?
    /// Pushes not shown as they came, by reason (`PushAuthenticator`).
    public private(set) var rejectedPushes: [PushRejection: Int] = [:]

    public init(clock: any WallClock = SystemWallClock(), grace: TimeInterval = 60, missesToUnreliable: Int = 3, catchUpDebounce: TimeInterval = 600) {
        self.clock = clock
        self.grace = grace
        self.missesToUnreliable = missesToUnreliable
        self.catchUpDebounce = catchUpDebounce
    }

    /// The app learned of an incoming transaction without a push; its push has `grace` to arrive.
    public mutating func observedTransaction(_ txID: String) -> [Action] {
        var actions = expire()
        if pushedEarly.removeValue(forKey: txID) != nil {
            actions += hit()
        } else if awaitingPush[txID] == nil {
            awaitingPush[txID] = clock.now
        }
        return actions
    }

    /// A push for `txID` arrived.
    public mutating func receivedPush(txID: String) -> [Action] {
        var actions = expire()
        if awaitingPush.removeValue(forKey: txID) != nil {
            actions += hit()
        } else {
            pushedEarly[txID] = clock.now
        }
        return actions
    }

    /// A push failed its checks and was shown as the app's generic text.
    public mutating func rejected(_ reason: PushRejection) {
        rejectedPushes[reason, default: 0] += 1
    }

    /// Counts the transactions whose grace ran out; call it from a timer as well.
    public mutating func evaluate() -> [Action] {
        expire()
    }

    /// Whether to run a catch-up sync now (app active, restart); records it when yes.
    public mutating func shouldCatchUp(_ reason: CatchUpReason) -> Bool {
        let now = clock.now
        if state == .reliable, let last = lastCatchUp, now.timeIntervalSince(last) < catchUpDebounce { return false }
        lastCatchUp = now
        return true
    }

    private mutating func hit() -> [Action] {
        consecutiveMisses = 0
        state = .reliable
        return []
    }

    private mutating func expire() -> [Action] {
        let now = clock.now
        pushedEarly = pushedEarly.filter { now.timeIntervalSince($0.value) < catchUpDebounce }
        let expired = awaitingPush.filter { now.timeIntervalSince($0.value) >= grace }.sorted { $0.value < $1.value }
        var actions: [Action] = []
        for (txID, _) in expired {
            awaitingPush[txID] = nil
            consecutiveMisses += 1
            if consecutiveMisses >= missesToUnreliable && state != .unreliable {
                state = .unreliable
                lastCatchUp = now
                actions = [.reregister, .catchUp]
            }
        }
        return actions
    }
}
