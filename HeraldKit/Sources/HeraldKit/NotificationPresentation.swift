import Foundation

/// How a notification presents beside its title and body, as Herald's push says it in `aps`:
/// the thread it groups under, its category (whose actions the device offers), its sound, how
/// much it may interrupt, its relevance in a summary, and the app's badge.
public struct NotificationPresentation: Hashable, Sendable {
    /// The thread the notification groups under: the conversation's id when HeraldKit resolved one
    /// (a Kasia contact's address, whatever the push said), else the push's `thread-id`.
    public var threadIdentifier: String?
    public var category: String?
    /// A sound's name (`default` for the system's).
    public var sound: String?
    /// `passive`, `active`, `time-sensitive` or `critical`.
    public var interruptionLevel: String?
    public var relevanceScore: Double?
    public var badge: Int?
    /// The name a summary of the thread shows ("3 more from Alice"): the sender's.
    public var summaryArgument: String?
    /// Who sent it, as a communication notification shows them (`INPerson`).
    public var sender: NotificationPerson?
    /// The conversation it belongs to (`INSendMessageIntent`'s conversation), which actions act on.
    public var conversation: NotificationConversation?

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
    /// outer `aps` a sealed push carries), never a thread, sender or conversation, which could name someone.
    var withoutThread: NotificationPresentation {
        var copy = self
        copy.threadIdentifier = nil
        copy.summaryArgument = nil
        copy.sender = nil
        copy.conversation = nil
        return copy
    }

    /// The push's presentation with what HeraldKit resolved on the phone: the conversation, its
    /// thread, the sender and the summary's name win; how it rings is the push's, `resolved`'s
    /// where the push says nothing (a Kasia kind's category and sound).
    func resolved(with resolved: NotificationPresentation) -> NotificationPresentation {
        var out = self
        if let conversation = resolved.conversation {
            out.conversation = conversation
            out.threadIdentifier = conversation.id
        }
        out.sender = resolved.sender ?? out.sender
        out.summaryArgument = resolved.summaryArgument ?? out.summaryArgument
        out.category = out.category ?? resolved.category
        out.sound = out.sound ?? resolved.sound
        return out
    }

    static let levels: Set<String> = ["passive", "active", "time-sensitive", "critical"]
}

/// A person as a communication notification shows them: the handle the app knows them by (a
/// Kaspa address), the name the user gave them, and their picture.
public struct NotificationPerson: Hashable, Sendable {
    public var handle: String
    public var displayName: String
    /// The contact's picture: an image file the app keeps in its App Group (`Contact.avatar`).
    public var avatar: String?

    public init(handle: String, displayName: String, avatar: String? = nil) {
        self.handle = handle
        self.displayName = displayName
        self.avatar = avatar
    }
}

/// The conversation a notification belongs to: its id (what a reply or a read marker names) and,
/// for a group, its name.
public struct NotificationConversation: Hashable, Sendable {
    public var id: String
    public var groupName: String?

    public init(id: String, groupName: String? = nil) {
        self.id = id
        self.groupName = groupName
    }

    /// The key under which `HeraldNotificationService` leaves the conversation's id in the
    /// notification's `userInfo`, for `NotificationActionRouter`.
    public static let userInfoKey = "herald_conversation"
}
