public import KasiaProtocol

/// A notification category as an app registers it with the system (`UNNotificationCategory`),
/// without the platform's types: its id, which a push's `category` names, and its actions.
public struct NotificationCategory: Hashable, Sendable {
    public var identifier: String
    public var actions: [NotificationAction]

    public init(identifier: String, actions: [NotificationAction]) {
        self.identifier = identifier
        self.actions = actions
    }
}

/// One action of a category (`UNNotificationAction`, or `UNTextInputNotificationAction` when it
/// takes text).
public struct NotificationAction: Hashable, Sendable {
    /// What the user types, if anything.
    public enum Input: Hashable, Sendable {
        case none
        /// A text field with its send button's title and placeholder (a quick reply).
        case text(button: String, placeholder: String)
    }

    public var identifier: String
    public var title: String
    public var input: Input
    /// The app comes to the foreground (`.foreground`); otherwise it runs in the background.
    public var opensApp: Bool
    /// Shown in red (`.destructive`).
    public var isDestructive: Bool
    /// Only on an unlocked device (`.authenticationRequired`): anything that sends or accepts.
    public var requiresUnlock: Bool

    public init(identifier: String, title: String, input: Input = .none, opensApp: Bool = false, isDestructive: Bool = false, requiresUnlock: Bool = false) {
        self.identifier = identifier
        self.title = title
        self.input = input
        self.opensApp = opensApp
        self.isDestructive = isDestructive
        self.requiresUnlock = requiresUnlock
    }

    /// The ids `NotificationActionRouter` knows.
    public static let replyIdentifier = "herald.reply"
    public static let markReadIdentifier = "herald.mark-read"
    public static let acceptIdentifier = "herald.accept"
    public static let declineIdentifier = "herald.decline"
    public static let openIdentifier = "herald.open"

    public static let reply = NotificationAction(
        identifier: replyIdentifier, title: "Reply", input: .text(button: "Send", placeholder: "Message"), requiresUnlock: true)
    public static let markRead = NotificationAction(identifier: markReadIdentifier, title: "Mark as Read")
    public static let accept = NotificationAction(identifier: acceptIdentifier, title: "Accept", requiresUnlock: true)
    public static let decline = NotificationAction(identifier: declineIdentifier, title: "Decline", isDestructive: true, requiresUnlock: true)
    public static let open = NotificationAction(identifier: openIdentifier, title: "Open", opensApp: true)
}

extension NotificationCategory {
    /// A Kasia message: reply with text, mark as read. Herald sends it as `kasia.message`.
    public static let kasiaMessage = NotificationCategory(identifier: KasiaMessageKind.contextualMessage.notificationCategory, actions: [.reply, .markRead])
    /// A contact request: accept, decline (`kasia.handshake`).
    public static let kasiaHandshake = NotificationCategory(identifier: KasiaMessageKind.handshake.notificationCategory, actions: [.accept, .decline])
    /// A payment: open it in the app (`kasia.payment`).
    public static let kasiaPayment = NotificationCategory(identifier: KasiaMessageKind.payment.notificationCategory, actions: [.open])

    /// The three a Kasia app registers.
    public static let kasiaSet: [NotificationCategory] = [kasiaMessage, kasiaHandshake, kasiaPayment]

    /// The category Herald gives a kind's pushes.
    public static func kasia(_ kind: KasiaMessageKind) -> NotificationCategory {
        switch kind {
        case .contextualMessage: kasiaMessage
        case .handshake: kasiaHandshake
        case .payment: kasiaPayment
        }
    }
}
