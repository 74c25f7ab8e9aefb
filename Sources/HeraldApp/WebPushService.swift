import HeraldCore
import HeraldDelivery
import HeraldWebPushService
import HeraldServer
import HeraldWebPush
import HeraldWebPushCore
import HeraldWebPushSimulator
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

    /// The built-in simulator and its own address: the one inside address Herald sends to
    /// without being told.
    struct Simulated: Sendable {
        let simulator: WebPushSimulator
        let host: String
    }

    /// Apps without a VAPID key sign with an ephemeral one and get a Web Push simulator.
    public func startSimulator(for apps: [PushServiceApp], eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> BuiltInSimulator? {
        let apps = apps.filter { $0.configuration.vapid == nil }
        guard !apps.isEmpty else { return nil }
        var configuration = WebPushSimulator.Configuration()
        configuration.controlPort = nil
        let sim = try await WebPushSimulator.start(configuration: configuration)
        return BuiltInSimulator(
            name: "webpush", address: "\(sim.origin)",
            warning:
                "No VAPID key (HERALD_VAPID_*): these apps sign Web Push with an EPHEMERAL key, so browser subscriptions made with it end when Herald restarts; a built-in Web Push simulator is running",
            apps: apps.map(\.id), readiness: ReadinessCheck("built-in Web Push simulator listening") { sim.isListening },
            control: sim.control, stop: { await sim.shutdown() }, handle: Simulated(simulator: sim, host: "\(configuration.host):\(sim.port)"))
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
        let simulated = simulators.running[.web]?.handle as? WebPushService.Simulated
        var allowHosts = settings.webPush.allowHosts
        if let simulated { allowHosts.insert(simulated.host) }
        endpointGuard = WebPushEndpointGuard(policy: WebPushAddressPolicy(allowedHosts: allowHosts))
        var configuration = WebPushClientConfiguration(endpointGuard: endpointGuard)
        configuration.trustRootsPEMFiles = settings.webPush.caFile.map { [$0] } ?? []
        // The built-in simulators' CAs are trusted from memory: nothing is written to the temporary directory.
        configuration.trustRootsPEM = simulated.map { [$0.simulator.tls.caPEM] } ?? []
        client = try WebPushClient(configuration: configuration, eventLoopGroup: group, logger: Logger(label: "herald.webpush"))
        var vapid: [String: VAPIDSettings] = [:]
        for app in settings.apps {
            vapid[app.settings.id] = try app.vapid ?? VAPIDSettings(key: VAPIDKey(privateKey: .init()), subject: VAPIDSubject(VAPIDSettings.developmentSubject))
        }
        self.vapid = vapid
    }
}
