import HeraldKit
import UIKit
import UserNotifications

@main
final class AppDelegate: UIResponder, UIApplicationDelegate {
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
        await push.received(HeraldPush(userInfo: userInfo))
        return .newData
    }
}
