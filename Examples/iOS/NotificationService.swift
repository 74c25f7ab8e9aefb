import HeraldKit
import UserNotifications

/// The Notification Service Extension: HeraldKit opens and verifies the push, then its pure
/// function does the work.
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

        // Open the sealed push and check its signature against the pinned key before anything is
        // shown; anything that fails shows the generic text, and its reason is left for the app.
        let verified: Result<[UInt8], PushRejection>
        if let pinned = try? store?.contents().pinnedSigningKey,
            let authenticator = try? PushAuthenticator(pinnedKey: pinned, keys: SharedKeychain.sealedPushKeys())
        {
            verified = Result { () throws(PushRejection) in try authenticator.document(userInfo: request.content.userInfo) }
        } else {
            verified = .failure(.unsigned)
        }
        // P256KCurve is also the BIP340 verifier Kasia sender proofs need: without one the
        // resolver is not made, and the generic text stands rather than an unchecked sender.
        guard let resolver = try? NotificationContentResolver(cipher: KasiaCipher(curve: P256KCurve())) else {
            contentHandler(content)
            return
        }
        let (outcome, rejection) = resolver.resolve(verified: verified, contacts: contacts, privateKey: key)
        if let rejection { SharedKeychain.noteRejectedPush(rejection) }  // the app feeds its PushReliabilityTracker
        if !outcome.title.isEmpty { content.title = outcome.title }
        if !outcome.body.isEmpty { content.body = outcome.body }
        if let record = outcome.record { try? store?.record(record) }
        contentHandler(content)
    }

    override func serviceExtensionTimeWillExpire() {
        if let contentHandler, let bestAttempt { contentHandler(bestAttempt) }
    }
}
