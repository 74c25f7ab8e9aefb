import HeraldCore
import HeraldDelivery
import HeraldWebPush
import HeraldWebPushCore
import Logging
import NIOPosix

/// Web Push: `platform: "web"`, a subscription's endpoint as the token, a provider per app signing
/// with its VAPID key, all on one client (connections are per push service, not per app).
public struct WebPushService: PushService {
    public init() {}
    public var platform: Platform { .web }

    public func makeProvider(for app: PushServiceApp, context: PushServiceContext) throws -> any PushProvider {
        let vapid = context.webPush.vapid[app.id]!
        return WebPushProvider(client: context.webPush.client, signer: VAPIDSigner(key: vapid.key, subject: vapid.subject))
    }

    /// Every app's provider shares one client: its connections, counted once.
    public func connectionsOpen(_ providers: [any PushProvider], context: PushServiceContext) -> Int {
        context.webPush.client.connectionsOpen
    }
}

/// What every app's Web Push provider shares, and what registration needs of it: the SSRF rule
/// (the built-in simulator's address allowed), the client, and each app's VAPID key (an ephemeral
/// one for an app without).
struct WebPushShared: Sendable {
    let endpointGuard: WebPushEndpointGuard
    let client: WebPushClient
    let vapid: [String: VAPIDSettings]

    init(settings: ServeSettings, simulators: BuiltInSimulators, eventLoopGroup group: MultiThreadedEventLoopGroup) throws {
        var allowHosts = settings.webPush.allowHosts
        if let host = simulators.webPushHost { allowHosts.insert(host) }
        endpointGuard = WebPushEndpointGuard(policy: WebPushAddressPolicy(allowedHosts: allowHosts))
        var configuration = WebPushClientConfiguration(endpointGuard: endpointGuard)
        configuration.trustRootsPEMFiles = settings.webPush.caFile.map { [$0] } ?? []
        // The built-in simulators' CAs are trusted from memory: nothing is written to the temporary directory.
        configuration.trustRootsPEM = simulators.webPush.map { [$0.tls.caPEM] } ?? []
        client = try WebPushClient(configuration: configuration, eventLoopGroup: group, logger: Logger(label: "herald.webpush"))
        var vapid: [String: VAPIDSettings] = [:]
        for app in settings.apps {
            vapid[app.settings.id] = try app.vapid ?? VAPIDSettings(key: VAPIDKey(privateKey: .init()), subject: VAPIDSubject(VAPIDSettings.developmentSubject))
        }
        self.vapid = vapid
    }
}
