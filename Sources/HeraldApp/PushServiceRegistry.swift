import HeraldAPNsService
import HeraldFCMService
public import HeraldPushService
import HeraldWebPushService

extension PushServiceRegistry {
    /// APNs, FCM and Web Push.
    public static let builtIn = PushServiceRegistry([APNsService(), FCMService(), WebPushService()])
}
