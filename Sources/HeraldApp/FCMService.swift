import HeraldCore
import HeraldDelivery
import HeraldFCMService
import HeraldServer
import HeraldFCM
import HeraldFCMCore
import HeraldFCMSimulator
import Logging
import NIOPosix

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
        let sim = context.simulator(of: .android, as: FCMSimulator.self)!
        var configuration = FCMClientConfiguration(url: sim.url)
        configuration.trustRootsPEM = [sim.tls.caPEM]
        return FCMPushProvider(
            client: try FCMClient(
                configuration: configuration, account: try FCMServiceAccount(json: sim.serviceAccountJSON),
                eventLoopGroup: context.eventLoopGroup, logger: logger))
    }

    /// Apps without FCM credentials share one simulator and its service account.
    public func startSimulator(for apps: [PushServiceApp], eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> BuiltInSimulator? {
        let apps = apps.filter { $0.configuration.fcm == nil }
        guard !apps.isEmpty else { return nil }
        var configuration = FCMSimulator.Configuration()
        configuration.controlPort = nil
        let sim = try await FCMSimulator.start(configuration: configuration)
        return BuiltInSimulator(
            name: "fcm", address: "\(sim.url)",
            warning: "No FCM credentials (HERALD_FCM_*): Android pushes go to the built-in FCM SIMULATOR, not to Google", apps: apps.map(\.id),
            readiness: ReadinessCheck("built-in FCM simulator listening") { sim.isListening }, control: sim.control,
            stop: { await sim.shutdown() }, handle: sim)
    }
}
