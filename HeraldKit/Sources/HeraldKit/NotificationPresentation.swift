import Foundation

/// How a notification presents beside its title and body, as Herald's push says it in `aps`:
/// the thread it groups under, its category (whose actions the device offers), its sound, how
/// much it may interrupt, its relevance in a summary, and the app's badge.
public struct NotificationPresentation: Hashable, Sendable {
    public var threadIdentifier: String?
    public var category: String?
    /// A sound's name (`default` for the system's).
    public var sound: String?
    /// `passive`, `active`, `time-sensitive` or `critical`.
    public var interruptionLevel: String?
    public var relevanceScore: Double?
    public var badge: Int?

    public init(
        threadIdentifier: String? = nil, category: String? = nil, sound: String? = nil, interruptionLevel: String? = nil,
        relevanceScore: Double? = nil, badge: Int? = nil
    ) {
        self.threadIdentifier = threadIdentifier
        self.category = category
        self.sound = sound
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.badge = badge
    }

    /// Read from a push's `aps` dictionary (Apple's keys); what is missing or malformed stays nil.
    public init(aps: Any?) {
        self.init()
        guard let aps = aps as? [String: Any] else { return }
        threadIdentifier = aps["thread-id"] as? String
        category = aps["category"] as? String
        sound = aps["sound"] as? String
        interruptionLevel = (aps["interruption-level"] as? String).flatMap { Self.levels.contains($0) ? $0 : nil }
        relevanceScore = (aps["relevance-score"] as? NSNumber).map(\.doubleValue).flatMap { (0...1).contains($0) ? $0 : nil }
        badge = (aps["badge"] as? NSNumber).map(\.intValue).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// Read from a push document's bytes (a verified document's `aps`).
    init(document: [UInt8]) {
        let object = try? JSONSerialization.jsonObject(with: Data(document)) as? [String: Any]
        self.init(aps: object?["aps"])
    }

    /// What a push that failed its checks may still show: how it rings and its category (the
    /// outer `aps` a sealed push carries), never a thread, which could name someone.
    var withoutThread: NotificationPresentation {
        var copy = self
        copy.threadIdentifier = nil
        return copy
    }

    static let levels: Set<String> = ["passive", "active", "time-sensitive", "critical"]
}
