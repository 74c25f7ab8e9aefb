import HeraldKit
import Intents
import UserNotifications

/// The Notification Service Extension: one call to HeraldKit opens the sealed push, checks its
/// signature against the key the app pinned, resolves its title, body and presentation (thread,
/// category, sound, the sender with their picture), and stores the message (or a pending fetch)
/// for the app; a push that fails its checks shows the generic text and rings as it came.
final class NotificationService: UNNotificationServiceExtension {
    private var contentHandler: ((UNNotificationContent) -> Void)?
    private var bestAttempt: UNNotificationContent?

    override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        self.contentHandler = contentHandler
        bestAttempt = request.content
        let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.kasia")!
        // P256KCurve is also the BIP340 verifier Kasia sender proofs need: without one no service
        // is made, and the push is shown as it came (the generic alert of a sealed push).
        guard let service = HeraldNotificationService.appGroup(
            container, curve: P256KCurve(), keys: SharedKeychain.sealedPushKeys(),
            privateKey: try? KasiaPrivateKey(bytes: SharedKeychain.walletPrivateKey()))  // the app's keychain access group
        else { return contentHandler(request.content) }
        let (content, outcome, rejection) = service.content(for: request)
        if let rejection { SharedKeychain.noteRejectedPush(rejection) }  // the app feeds its PushReliabilityTracker
        // Conversations read on another device ride along in the seal (Apple may have dropped
        // their background push): what they cover goes before this one shows.
        if !outcome.dismissals.isEmpty {
            let center = UNUserNotificationCenter.current()
            center.getDeliveredNotifications { notifications in
                let delivered = notifications.map { DeliveredNotification(identifier: $0.request.identifier, userInfo: $0.request.content.userInfo) }
                let contacts = (try? SharedStore(directory: container).contents().contacts) ?? []
                center.removeDeliveredNotifications(withIdentifiers: DismissalPlanner(contacts: contacts).plan(outcome.dismissals, delivered: delivered).remove)
            }
        }
        contentHandler(Self.communication(content, outcome.presentation, container: container) ?? content)
    }

    /// iOS 15+: a message from a contact as a communication notification, with their name and
    /// picture (the app's `Contact.avatar`, a file in the App Group). Needs the Communication
    /// Notifications capability and `INSendMessageIntent` in the extension's NSExtension attributes.
    static func communication(_ content: UNNotificationContent, _ presentation: NotificationPresentation, container: URL) -> UNNotificationContent? {
        guard #available(iOS 15.0, *), let sender = presentation.sender, let conversation = presentation.conversation else { return nil }
        let image = sender.avatar.flatMap { try? Data(contentsOf: container.appendingPathComponent($0)) }.map { INImage(imageData: $0) }
        let person = INPerson(
            personHandle: INPersonHandle(value: sender.handle, type: .unknown), nameComponents: nil, displayName: sender.displayName,
            image: image, contactIdentifier: nil, customIdentifier: sender.handle)
        let intent = INSendMessageIntent(
            recipients: nil, outgoingMessageType: .outgoingMessageText, content: content.body, speakableGroupName: conversation.groupName.map { INSpeakableString(spokenPhrase: $0) },
            conversationIdentifier: conversation.id, serviceName: nil, sender: person, attachments: nil)
        let interaction = INInteraction(intent: intent, response: nil)
        interaction.direction = .incoming
        interaction.donate(completion: nil)
        return try? content.updating(from: intent)
    }

    override func serviceExtensionTimeWillExpire() {
        if let contentHandler, let bestAttempt { contentHandler(bestAttempt) }
    }
}
