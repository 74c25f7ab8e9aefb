import HeraldKit
import Testing

/// Kasia's categories and what each of their actions does, as an app's response handler sees them.
@Suite struct NotificationActionRouterTests {
    let router = NotificationActionRouter()
    let info: [AnyHashable: Any] = [NotificationConversation.userInfoKey: "kaspa:qalice"]

    @Test("the Kasia set: message (reply with text, mark as read), handshake (accept, decline), payment (open), under the ids Herald sends")
    func kasiaSet() {
        #expect(NotificationCategory.kasiaSet.map(\.identifier) == ["kasia.message", "kasia.handshake", "kasia.payment"])
        #expect(NotificationCategory.kasiaMessage.actions.map(\.identifier) == ["herald.reply", "herald.mark-read"])
        #expect(NotificationCategory.kasiaMessage.actions[0].input == .text(button: "Send", placeholder: "Message"))
        #expect(NotificationCategory.kasiaHandshake.actions.map(\.identifier) == ["herald.accept", "herald.decline"])
        #expect(NotificationCategory.kasiaHandshake.actions[1].isDestructive)
        #expect(NotificationCategory.kasiaPayment.actions.map(\.identifier) == ["herald.open"] && NotificationCategory.kasiaPayment.actions[0].opensApp)
        // What sends or accepts needs an unlocked phone.
        #expect([NotificationAction.reply, .accept, .decline].allSatisfy(\.requiresUnlock) && !NotificationAction.markRead.requiresUnlock)
        for kind in KasiaMessageKind.allCases {
            #expect(NotificationCategory.kasiaSet.contains(NotificationCategory.kasia(kind)))
        }
    }

    @Test("every action of the set maps to its command on the conversation the notification carried")
    func everyAction() {
        let table: [(String, String?, NotificationCommand?)] = [
            ("herald.reply", "On my way", .reply(conversation: "kaspa:qalice", text: "On my way")),
            ("herald.mark-read", nil, .markRead(conversation: "kaspa:qalice")),
            ("herald.accept", nil, .accept(conversation: "kaspa:qalice")),
            ("herald.decline", nil, .decline(conversation: "kaspa:qalice")),
            ("herald.open", nil, .open(conversation: "kaspa:qalice")),
            (NotificationActionRouter.defaultActionIdentifier, nil, .open(conversation: "kaspa:qalice")),
        ]
        for (action, text, command) in table {
            #expect(router.command(actionIdentifier: action, userInfo: info, text: text) == command, "\(action)")
        }
        let everyID = Set(NotificationCategory.kasiaSet.flatMap(\.actions).map(\.identifier))
        #expect(everyID.allSatisfy { router.command(actionIdentifier: $0, userInfo: info, text: "x") != nil })
    }

    @Test("nothing to do: an empty reply, a conversation-less notification for an action that needs one, the system's dismiss, an unknown action")
    func nothingToDo() {
        #expect(router.command(actionIdentifier: "herald.reply", userInfo: info, text: "  \n") == nil)
        #expect(router.command(actionIdentifier: "herald.reply", userInfo: info, text: nil) == nil)
        for action in ["herald.reply", "herald.mark-read", "herald.accept", "herald.decline"] {
            #expect(router.command(actionIdentifier: action, userInfo: [:], text: "hi") == nil, "\(action)")
            #expect(router.command(actionIdentifier: action, userInfo: [NotificationConversation.userInfoKey: ""], text: "hi") == nil, "\(action)")
        }
        #expect(router.command(actionIdentifier: "herald.open", userInfo: [:]) == .open(conversation: nil))
        #expect(router.command(actionIdentifier: "com.apple.UNNotificationDismissActionIdentifier", userInfo: info) == nil)
        #expect(router.command(actionIdentifier: "something.else", userInfo: info, text: "x") == nil)
    }
}
