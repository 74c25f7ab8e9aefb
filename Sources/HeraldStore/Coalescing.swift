/// An event that coalesces (`coalesce_seconds`): per device and watch key, at most one push per
/// window, and a newer event replaces one still waiting (latest wins).
public struct Coalescing: Hashable, Sendable {
    /// The watch key (lookup form) the event targets.
    public var key: String
    /// The window, in milliseconds.
    public var window: Int64

    /// The longest window, in seconds: an hour.
    public static let maximumWindowSeconds: Int64 = 3_600

    public init(key: String, window: Int64) {
        self.key = key
        self.window = window
    }

    /// The event's stored columns; nil when it does not coalesce.
    init?(storedKey key: String?, window: Int64?) {
        guard let key, let window, (1...Self.maximumWindowSeconds * 1_000).contains(window) else { return nil }
        self.init(key: key, window: window)
    }

    /// Where a device's new coalescing delivery goes, in unix milliseconds: `due` is its
    /// `next_attempt_at`, `nextSlot` the earliest the one after it may go.
    /// - Parameters:
    ///   - nextSlot: the device's slot for the key; nil when it has none.
    ///   - replacedDue: the due time of the delivery this one replaced (it was still pending):
    ///     the new one takes its place and the slot does not move.
    func place(now: Int64, nextSlot: Int64?, replacedDue: Int64?) -> (due: Int64, nextSlot: Int64) {
        if let replacedDue, let nextSlot { return (replacedDue, nextSlot) }
        let due = max(now, nextSlot ?? now)
        // Saturating: a slot read from the store is not trusted to leave room for a window.
        let next = due.addingReportingOverflow(window)
        return (due, next.overflow ? .max : next.partialValue)
    }

    /// The reason a replaced delivery is dropped with.
    static let droppedReason = "coalesced"
}
