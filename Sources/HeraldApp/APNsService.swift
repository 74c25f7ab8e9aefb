import HeraldAPNs
import HeraldAPNsCore
import HeraldCore
import HeraldDelivery
import Logging

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
        let sim = context.simulators.apns!
        let tokens = APNsProviderTokenSource(key: context.simulators.apnsKeys[app.id]!)
        return APNsPushProvider(topic: app.configuration.simulatorTopic) { environment in
            var configuration = APNsClientConfiguration(environment: environment, url: sim.url(for: environment))
            configuration.trustRootsPEM = [sim.tls.caPEM]
            return try APNsClient(configuration: configuration, tokens: tokens, eventLoopGroup: group, logger: logger)
        }
    }
}
