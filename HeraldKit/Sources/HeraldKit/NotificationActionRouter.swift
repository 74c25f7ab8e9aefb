/// What the user asked for from a notification, in the app's terms.
public enum NotificationCommand: Hashable, Sendable {
    /// Send `text` into the conversation (a Kasia app: `KasiaReplyDraft`, signed by its wallet).
    case reply(conversation: String, text: String)
    /// The conversation is read up to this notification.
    case markRead(conversation: String)
    /// Accept the contact request.
    case accept(conversation: String)
    /// Decline it.
    case decline(conversation: String)
    /// Open the app, at the conversation when the notification had one.
    case open(conversation: String?)
}

/// Turns a notification response (the action's id, the notification's `userInfo` and what the user
/// typed) into a `NotificationCommand`, without the platform's types: the conversation is the one
/// `HeraldNotificationService` left in `userInfo` (`NotificationConversation.userInfoKey`).
/// A response that names no conversation where one is needed, an empty reply, or an action it
/// does not know (the system's dismiss included) is nil: nothing to do.
public struct NotificationActionRouter: Sendable {
    /// The system's tap on the notification (`UNNotificationDefaultActionIdentifier`).
    public static let defaultActionIdentifier = "com.apple.UNNotificationDefaultActionIdentifier"

    public init() {}

    public func command(actionIdentifier: String, userInfo: [AnyHashable: Any], text: String? = nil) -> NotificationCommand? {
        let conversation = (userInfo[NotificationConversation.userInfoKey] as? String).flatMap { $0.isEmpty ? nil : $0 }
        switch actionIdentifier {
        case NotificationAction.openIdentifier, Self.defaultActionIdentifier:
            return .open(conversation: conversation)
        case NotificationAction.replyIdentifier:
            guard let conversation, let text, text.contains(where: { !$0.isWhitespace }) else { return nil }
            return .reply(conversation: conversation, text: text)
        case NotificationAction.markReadIdentifier:
            return conversation.map { .markRead(conversation: $0) }
        case NotificationAction.acceptIdentifier:
            return conversation.map { .accept(conversation: $0) }
        case NotificationAction.declineIdentifier:
            return conversation.map { .decline(conversation: $0) }
        default:
            return nil
        }
    }
}
