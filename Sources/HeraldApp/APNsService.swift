import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldCore
import HeraldAPNsSimulator
import HeraldDelivery
import HeraldAPNsService
import HeraldServer
import Logging
import NIOPosix

/// Apple's push service: `platform: "ios"`, hex tokens, an APNs provider per app with a client per
/// APNs environment (opened on first use), on Apple's hosts or the built-in simulator's two.
public struct APNsService: PushService {
    public init() {}
    public var platform: Platform { .ios }

    public func makeProvider(for app: PushServiceApp, context: PushServiceContext) throws -> any PushProvider {
        let logger = Logger(label: "herald.apns")
        let group = context.eventLoopGroup
        if let apns = app.configuration.apns {
            // The store is the ledger: every instance on this database sends the same JWT per key.
            let tokens = APNsProviderTokenSource(
                key: try apns.loadSigningKey(), ledger: context.store,
                onLedgerError: { logger.warning("shared provider token unavailable, using a local one", metadata: ["error": "\($0)"]) })
            return APNsPushProvider(topic: apns.topic) { environment in
                try APNsClient(configuration: apns.clientConfiguration(environment: environment), tokens: tokens, eventLoopGroup: group, logger: logger)
            }
        }
        // The simulator's two hosts, as Apple's: a client per environment, opened on first use.
        let simulated = context.simulator(of: .ios, as: Simulated.self)!
        let sim = simulated.simulator
        let tokens = APNsProviderTokenSource(key: simulated.keys[app.id]!)
        return APNsPushProvider(topic: app.configuration.simulatorTopic) { environment in
            var configuration = APNsClientConfiguration(environment: environment, url: sim.url(for: environment))
            configuration.trustRootsPEM = [sim.tls.caPEM]
            return try APNsClient(configuration: configuration, tokens: tokens, eventLoopGroup: group, logger: logger)
        }
    }

    /// The built-in simulator and each simulated app's ephemeral signing key.
    struct Simulated: Sendable {
        let simulator: APNsSimulator
        let keys: [String: APNsSigningKey]
    }

    /// Apps without Apple credentials share one simulator, each with its own ephemeral key.
    public func startSimulator(for apps: [PushServiceApp], eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> BuiltInSimulator? {
        let apps = apps.filter { $0.configuration.apns == nil }
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
        return BuiltInSimulator(
            name: "apns", address: "\(sim.url)",
            warning: "No APNs credentials (HERALD_APNS_*): pushes go to the built-in APNs SIMULATOR, not to Apple", apps: apps.map(\.id),
            readiness: ReadinessCheck("built-in APNs simulator listening") { sim.isListening }, control: sim.control,
            stop: { await sim.shutdown() }, handle: Simulated(simulator: sim, keys: keys))
    }
}
