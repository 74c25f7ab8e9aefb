import HeraldKit
import UIKit
import UserNotifications

@main
final class AppDelegate: UIResponder, UIApplicationDelegate, UNUserNotificationCenterDelegate {
    static let appGroup = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.kasia")!
    let push = PushNotificationManager(herald: AppDelegate.herald(), sharedStoreDirectory: AppDelegate.appGroup, curve: P256KCurve())

    /// Herald's client: the device's keys for sealed pushes registered as `push_keys`, and the
    /// app's signing key pinned at the first registration (or ship it: `.shipped("…")`).
    static func herald() -> HeraldClient {
        var configuration = HeraldClient.Configuration(baseURL: URL(string: "https://push.example.com")!)
        configuration.pushKeys = SharedKeychain.sealedPushKeys()  // made once with SealedPushKeys(), kept in the keychain group
        configuration.signingKeyPin = (try? SharedStore(directory: appGroup)).map(SigningKeyPin.trustOnFirstUse)
        return HeraldClient(configuration: configuration)
    }

    func application(_ application: UIApplication, didFinishLaunchingWithOptions options: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        // Kasia's categories (reply and mark as read; accept and decline; open), as HeraldKit describes them.
        let center = UNUserNotificationCenter.current()
        center.setNotificationCategories(Set(NotificationCategory.kasiaSet.map(Self.category)))
        center.delegate = self
        Task {
            if try await UNUserNotificationCenter.current().requestAuthorization(options: [.alert, .sound, .badge]) {
                application.registerForRemoteNotifications()
            }
            await push.appBecameActive(reason: .restart)
        }
        return true
    }

    func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        let token = deviceToken.map { String(format: "%02x", $0) }.joined()
        Task { await push.deviceTokenChanged(token) }
    }

    func application(
        _ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any]
    ) async -> UIBackgroundFetchResult {
        // A dismissal (read on another device) arrives as a background push: opened and checked
        // against the pinned key like any other, then the planner says what goes.
        if let pinned = try? SharedStore(directory: Self.appGroup).contents().pinnedSigningKey,
            let authenticator = try? PushAuthenticator(pinnedKey: pinned, keys: SharedKeychain.sealedPushKeys()),
            let document = try? authenticator.document(userInfo: userInfo)
        {
            await push.applyDismissals(Dismissal.all(in: document))
        }
        await push.received(HeraldPush(userInfo: userInfo))
        return .newData
    }

    /// A HeraldKit category as UserNotifications takes it.
    static func category(_ category: NotificationCategory) -> UNNotificationCategory {
        let actions = category.actions.map { action -> UNNotificationAction in
            var options: UNNotificationActionOptions = []
            if action.opensApp { options.insert(.foreground) }
            if action.isDestructive { options.insert(.destructive) }
            if action.requiresUnlock { options.insert(.authenticationRequired) }
            switch action.input {
            case .none: return UNNotificationAction(identifier: action.identifier, title: action.title, options: options)
            case .text(let button, let placeholder):
                return UNTextInputNotificationAction(
                    identifier: action.identifier, title: action.title, options: options, textInputButtonTitle: button, textInputPlaceholder: placeholder)
            }
        }
        return UNNotificationCategory(identifier: category.identifier, actions: actions, intentIdentifiers: [], options: [])
    }

    /// A tap or an action on one of Herald's notifications: the router says what to do; a quick
    /// reply becomes a Kasia transaction the wallet signs.
    func userNotificationCenter(_ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse) async {
        let command = NotificationActionRouter().command(
            actionIdentifier: response.actionIdentifier, userInfo: response.notification.request.content.userInfo,
            text: (response as? UNTextInputNotificationResponse)?.userText)
        switch command {
        case .reply(let conversation, let text)?:
            guard let contact = try? KaspaAddress(conversation), let alias = Wallet.shared.myAlias(for: conversation),
                let draft = try? KasiaReplyDraft(replying: text, to: contact, alias: alias, cipher: KasiaCipher(curve: P256KCurve()))
            else { return }
            try? await Wallet.shared.send(payload: draft.payload)  // a contextual message: it pays the wallet's own address
        case .markRead(let conversation)?: await push.markRead(conversation)
        case .accept(let conversation)?: try? await Wallet.shared.acceptHandshake(from: conversation)
        case .decline(let conversation)?: Wallet.shared.declineHandshake(from: conversation)
        case .open(let conversation)?: Wallet.shared.open(conversation: conversation)
        case nil: break
        }
    }

    /// The app keeps its own badge count in the App Group: what the extension stored and the app has not shown.
    func applicationDidBecomeActive(_ application: UIApplication) {
        let unread = ((try? SharedStore(directory: Self.appGroup).contents().messages.count) ?? 0)
        UNUserNotificationCenter.current().setBadgeCount(unread)
    }
}
