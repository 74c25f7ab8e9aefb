public import Foundation

/// How often a conversation view polls (SafeWhisper's hybrid model): every 5 s until
/// pushes prove they arrive, then every 30 s; a push for this conversation polls at once. Back
/// to 5 s when notifications are turned off, or when a poll finds messages no push announced.
public struct AdaptivePollingPolicy: Sendable {
    public static let fallbackInterval: TimeInterval = 5
    public static let pushBackedInterval: TimeInterval = 30

    public let clock: any WallClock
    public private(set) var interval: TimeInterval = fallbackInterval
    /// When the next poll is due.
    public private(set) var nextPoll: Date
    public private(set) var notificationsEnabled: Bool

    public init(clock: any WallClock = SystemWallClock(), notificationsEnabled: Bool) {
        self.clock = clock
        self.notificationsEnabled = notificationsEnabled
        nextPoll = clock.now
    }

    /// Whether a poll is due now.
    public var isDue: Bool { clock.now >= nextPoll }

    /// A push arrived; returns `true` when the app should poll immediately (it is for this view).
    public mutating func pushReceived(matchesThisConversation: Bool) -> Bool {
        guard matchesThisConversation else { return false }
        if notificationsEnabled { interval = Self.pushBackedInterval }
        nextPoll = clock.now
        return true
    }

    /// A poll ran. New messages that no push announced mean pushes are not arriving.
    public mutating func polled(foundMessagesWithoutPush: Bool) {
        if foundMessagesWithoutPush { interval = Self.fallbackInterval }
        nextPoll = clock.now + interval
    }

    /// The app came back to the foreground with the current notification permission.
    public mutating func appResumed(notificationsEnabled enabled: Bool) {
        notificationsEnabled = enabled
        if !enabled {
            interval = Self.fallbackInterval
            nextPoll = min(nextPoll, clock.now + interval)
        }
    }
}
