import HeraldKit
import UIKit
import UserNotifications

@main
final class AppDelegate: UIResponder, UIApplicationDelegate {
    let push = PushNotificationManager(
        herald: HeraldClient(configuration: .init(baseURL: URL(string: "https://push.example.com")!)),
        sharedStoreDirectory: FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.kasia")!,
        curve: P256KCurve())

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
