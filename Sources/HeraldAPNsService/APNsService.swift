import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldAPNsSimulator
public import HeraldCore
public import HeraldDelivery
public import HeraldMatrix
public import HeraldPushCore
public import HeraldPushService
import HeraldSimulatorSupport
import Logging
public import NIOPosix

/// Apple's push service: `platform: "ios"`, hex tokens, an APNs provider per app with a client per
/// APNs environment (opened on first use), on Apple's hosts or the built-in simulator's two.
public struct APNsService: PushService {
    public typealias AppServiceSettings = APNsSettings
    public typealias Simulated = APNsSimulated

    public init() {}
    public var platform: Platform { .ios }

    /// Apple's tokens: hex, stored lowercase.
    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        try APNsTokenRule().token(text, kind: kind)
    }

    public var settingsBlock: PushServiceSettingsBlock? { PushServiceSettingsBlock(key: "apns", variables: APNsSettings.fileKeys) }

    /// The `HERALD_APNS_*` variables; from a file, the `.p8` is loaded at once, so a file names it
    /// wrong before anything starts.
    public func appSettings(from variables: [String: String], source: PushServiceSettingsSource) throws -> APNsSettings? {
        guard let settings = try APNsSettings.fromEnvironment(variables) else {
            guard source == .file else { return nil }
            throw HeraldConfigurationError(field: "HERALD_APNS_KEY_PATH", message: "is required (with key_id, team_id and topic)")
        }
        if source == .file { _ = try settings.loadSigningKey() }
        return settings
    }

    /// The app's topic, and its builds' environment: on the built-in simulator too, the app's
    /// registrations default to it and its pushes go to that environment's host.
    public func configure(_ app: inout AppSettings, settings apns: APNsSettings?, variables: [String: String], source: PushServiceSettingsSource) throws {
        let simulatorTopic = source == .file ? "com.example." + app.id : "com.example.herald"
        app.topic = apns?.topic ?? simulatorTopic
        app.production = try (apns?.environment ?? APNsSettings.environment(variables)) == .production
    }

    /// Apple's payload limit per push type (VoIP's is larger).
    public var carriage: PushCarriage { PushCarriage(maximumPayload: { $0.maximumPayloadSize }) }

    /// Apple's rules for every published push (size, an `aps` dictionary, what the push type requires).
    public var publishLimits: (any PushLimits)? { APNsPushLimits() }

    /// Matrix pushers of `type: apns`.
    public var matrixPusher: (any MatrixPusher)? { BuiltInMatrixPusher.apns }

    public func makeProvider(for app: PushServiceApp<APNsSettings>, context: PushServiceContext<Self>) throws -> any PushProvider {
        let logger = Logger(label: "herald.apns")
        let group = context.eventLoopGroup
        if let apns = app.serviceSettings {
            // The store is the ledger: every instance on this database sends the same JWT per key.
            let tokens = APNsProviderTokenSource(
                key: try apns.loadSigningKey(), ledger: context.store,
                onLedgerError: { logger.warning("shared provider token unavailable, using a local one", metadata: ["error": "\($0)"]) })
            return APNsPushProvider(topic: apns.topic) { environment in
                try APNsClient(configuration: apns.clientConfiguration(environment: environment), tokens: tokens, eventLoopGroup: group, logger: logger)
            }
        }
        // The simulator's two hosts, as Apple's: a client per environment, opened on first use.
        // An app without settings is one the simulator started for, with a key of its own.
        guard let simulated = context.simulated, let key = simulated.keys[app.id] else { throw APNsSimulated.notStarted(for: app.id) }
        let sim = simulated.simulator
        let tokens = APNsProviderTokenSource(key: key)
        return APNsPushProvider(topic: app.settings.topic) { environment in
            var configuration = APNsClientConfiguration(environment: environment, url: sim.url(for: environment))
            configuration.trustRootsPEM = [sim.tls.caPEM]
            return try APNsClient(configuration: configuration, tokens: tokens, eventLoopGroup: group, logger: logger)
        }
    }

    /// Apps without Apple credentials share one simulator, each with its own ephemeral key.
    public func startSimulator(for apps: [PushServiceApp<APNsSettings>], eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> RunningSimulator<APNsSimulated>? {
        let apps = apps.filter { $0.serviceSettings == nil }
        guard !apps.isEmpty else { return nil }
        var keys: [String: APNsSigningKey] = [:]
        for (i, app) in apps.enumerated() {
            keys[app.id] = APNsSigningKey(privateKey: P256.Signing.PrivateKey(), keyID: String(format: "HERALDSIM%d", i), teamID: "HERALDSIM0")
        }
        var configuration = APNsSimulatorConfiguration()
        configuration.port = 0
        // Its control API answers on the admin listener, under /simulators/apns.
        configuration.controlPort = nil
        configuration.keys = keys.values.map { SimulatorKey(keyID: $0.keyID, teamID: $0.teamID, publicKey: $0.publicKey) }
        let sim = try await APNsSimulator.start(configuration: configuration, eventLoopGroup: eventLoopGroup)
        let simulator = BuiltInSimulator(
            name: "apns", address: "\(sim.url)",
            warning: "No APNs credentials (HERALD_APNS_*): pushes go to the built-in APNs SIMULATOR, not to Apple", apps: apps.map(\.id),
            readinessName: "built-in APNs simulator listening", isListening: { sim.isListening }, control: sim.control,
            stop: { await sim.shutdown() })
        return RunningSimulator(simulator, handle: APNsSimulated(simulator: sim, keys: keys))
    }

    /// `herald send`: the push to Apple (or `HERALD_APNS_URL`) with the `HERALD_APNS_*` credentials.
    public func directSender(for push: DirectPush, environment: [String: String], eventLoopGroup: MultiThreadedEventLoopGroup) throws -> (any DirectSender)? {
        try APNsDirectSender(push: push, environment: environment, eventLoopGroup: eventLoopGroup)
    }
}

/// The built-in APNs simulator as the providers use it: its two hosts, and each simulated app's
/// ephemeral signing key.
public struct APNsSimulated: Sendable {
    let simulator: APNsSimulator
    let keys: [String: APNsSigningKey]

    /// An app without credentials that the simulator did not start for: a bug in the assembly, said plainly.
    static func notStarted(for app: String) -> HeraldConfigurationError {
        HeraldConfigurationError(field: "HERALD_APNS_KEY_PATH", message: "app \(app) has no APNs credentials and no built-in simulator runs for it")
    }
}
