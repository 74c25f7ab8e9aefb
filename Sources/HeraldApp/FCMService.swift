import HeraldCore
import HeraldDelivery
import HeraldFCM
import HeraldFCMCore
import Logging

/// Google's push service: `platform: "android"`, registration tokens and Firebase Installation
/// IDs, an FCM provider per app with its service account (or the built-in simulator's).
public struct FCMService: PushService {
    public init() {}
    public var platform: Platform { .android }

    public func makeProvider(for app: PushServiceApp, context: PushServiceContext) throws -> any PushProvider {
        let logger = Logger(label: "herald.fcm")
        if let fcm = app.configuration.fcm {
            // The store is the ledger: every instance on this database uses one access token per account.
            return FCMPushProvider(
                client: try FCMClient(
                    configuration: fcm.clientConfiguration, account: fcm.account, projectID: fcm.projectID,
                    eventLoopGroup: context.eventLoopGroup, ledger: context.store, logger: logger))
        }
        let sim = context.simulators.fcm!
        var configuration = FCMClientConfiguration(url: sim.url)
        configuration.trustRootsPEM = [sim.tls.caPEM]
        return FCMPushProvider(
            client: try FCMClient(
                configuration: configuration, account: try FCMServiceAccount(json: sim.serviceAccountJSON),
                eventLoopGroup: context.eventLoopGroup, logger: logger))
    }
}
