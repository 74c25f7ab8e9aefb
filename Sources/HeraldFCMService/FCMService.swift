public import HeraldCore
public import HeraldDelivery
public import HeraldMatrix
import HeraldFCM
import HeraldFCMCore
public import HeraldFCMSimulator
public import HeraldPushCore
public import HeraldPushService
import HeraldSimulatorSupport
import Logging
public import NIOPosix

/// Google's push service: `platform: "android"`, registration tokens and Firebase Installation
/// IDs, an FCM provider per app with its service account (or the built-in simulator's).
public struct FCMService: PushService {
    public typealias AppServiceSettings = FCMSettings
    public typealias Simulated = FCMSimulator

    public init() {}
    public var platform: Platform { .android }

    /// Registration tokens and Firebase Installation IDs.
    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        try FCMTokenRule().token(text, kind: kind)
    }

    public var tokenKinds: Set<DeviceToken.Kind> { FCMTokenRule().tokenKinds }

    public var settingsBlock: PushServiceSettingsBlock? { PushServiceSettingsBlock(key: "fcm", variables: FCMSettings.fileKeys) }

    /// The `HERALD_FCM_*` variables, the service account loaded.
    public func appSettings(from variables: [String: String], source: PushServiceSettingsSource) throws -> FCMSettings? {
        guard let settings = try FCMSettings.fromEnvironment(variables) else {
            guard source == .file else { return nil }
            throw HeraldConfigurationError(field: "HERALD_FCM_CREDENTIALS_FILE", message: "is required")
        }
        return settings
    }

    /// What FCM refuses in the data a custom event gives verbatim.
    public var publishLimits: (any PushLimits)? { FCMPushLimits() }

    /// Matrix pushers of `type: fcm`.
    public var matrixPusher: (any MatrixPusher)? { BuiltInMatrixPusher.fcm }

    public func makeProvider(for app: PushServiceApp<FCMSettings>, context: PushServiceContext<Self>) throws -> any PushProvider {
        let logger = Logger(label: "herald.fcm")
        if let fcm = app.serviceSettings {
            // The store is the ledger: every instance on this database uses one access token per account.
            return FCMPushProvider(
                client: try FCMClient(
                    configuration: fcm.clientConfiguration, account: fcm.account, projectID: fcm.projectID,
                    eventLoopGroup: context.eventLoopGroup, ledger: context.store, logger: logger))
        }
        guard let sim = context.simulated else {
            throw HeraldConfigurationError(field: "HERALD_FCM_CREDENTIALS_FILE", message: "app \(app.id) has no FCM credentials and no built-in simulator runs for it")
        }
        var configuration = FCMClientConfiguration(url: sim.url)
        configuration.trustRootsPEM = [sim.tls.caPEM]
        return FCMPushProvider(
            client: try FCMClient(
                configuration: configuration, account: try FCMServiceAccount(json: sim.serviceAccountJSON),
                eventLoopGroup: context.eventLoopGroup, logger: logger))
    }

    /// Apps without FCM credentials share one simulator and its service account.
    public func startSimulator(for apps: [PushServiceApp<FCMSettings>], eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> RunningSimulator<FCMSimulator>? {
        let apps = apps.filter { $0.serviceSettings == nil }
        guard !apps.isEmpty else { return nil }
        var configuration = FCMSimulator.Configuration()
        configuration.controlPort = nil
        let sim = try await FCMSimulator.start(configuration: configuration)
        let simulator = BuiltInSimulator(
            name: "fcm", address: "\(sim.url)",
            warning: "No FCM credentials (HERALD_FCM_*): Android pushes go to the built-in FCM SIMULATOR, not to Google", apps: apps.map(\.id),
            readinessName: "built-in FCM simulator listening", isListening: { sim.isListening }, control: sim.control,
            stop: { await sim.shutdown() })
        return RunningSimulator(simulator, handle: sim)
    }

    /// `herald send --platform android`: one data-only message (title and body as data, as
    /// Herald sends them) through the `HERALD_FCM_*` service account.
    public func directSender(for push: DirectPush, environment: [String: String], eventLoopGroup: MultiThreadedEventLoopGroup) throws -> (any DirectSender)? {
        try FCMDirectSender(push: push, environment: environment, eventLoopGroup: eventLoopGroup)
    }
}
