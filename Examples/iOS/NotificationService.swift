import HeraldKit
import UserNotifications

/// The Notification Service Extension: one call to HeraldKit opens the sealed push, checks its
/// signature against the key the app pinned, resolves its title and body, and stores the message
/// (or a pending fetch) for the app; a push that fails its checks shows the generic text.
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
        if let rejection = service.handle(request, contentHandler: contentHandler) {
            SharedKeychain.noteRejectedPush(rejection)  // the app feeds its PushReliabilityTracker
        }
    }

    override func serviceExtensionTimeWillExpire() {
        if let contentHandler, let bestAttempt { contentHandler(bestAttempt) }
    }
}
