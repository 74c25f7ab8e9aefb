import HeraldKit
import UserNotifications

/// The Notification Service Extension: HeraldKit's pure function does the work.
final class NotificationService: UNNotificationServiceExtension {
    private var contentHandler: ((UNNotificationContent) -> Void)?
    private var bestAttempt: UNMutableNotificationContent?

    override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        self.contentHandler = contentHandler
        guard let content = request.content.mutableCopy() as? UNMutableNotificationContent else {
            contentHandler(request.content)
            return
        }
        bestAttempt = content
        let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.kasia")!
        let store = try? SharedStore(directory: container)
        let contacts = (try? store?.contents().contacts) ?? []
        let key = try? KasiaPrivateKey(bytes: SharedKeychain.walletPrivateKey())  // the app's keychain access group

        let push = HeraldPush(userInfo: request.content.userInfo)
        let outcome = NotificationContentResolver(cipher: KasiaCipher(curve: P256KCurve()))
            .resolve(push, contacts: contacts, privateKey: key)
        if !outcome.title.isEmpty { content.title = outcome.title }
        if !outcome.body.isEmpty { content.body = outcome.body }
        if let record = outcome.record { try? store?.record(record) }
        contentHandler(content)
    }

    override func serviceExtensionTimeWillExpire() {
        if let contentHandler, let bestAttempt { contentHandler(bestAttempt) }
    }
}
