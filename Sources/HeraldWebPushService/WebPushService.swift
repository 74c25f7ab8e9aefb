import Crypto
import HeraldCore
public import HeraldDelivery
public import HeraldMatrix
public import HeraldPushCore
public import HeraldPushService
import HeraldSimulatorSupport
import HeraldWebPush
import HeraldWebPushCore
import HeraldWebPushSimulator
import WebPushCrypto
import Logging
public import NIOPosix

/// Web Push: `platform: "web"`, a subscription's endpoint as the token, a provider per app signing
/// with its VAPID key, all on one client (connections are per push service, not per app).
public struct WebPushService: PushService {
    public typealias AppServiceSettings = VAPIDSettings
    public typealias InstanceSettings = WebPushSettings
    public typealias Shared = WebPushShared
    public typealias Simulated = WebPushSimulated

    public init() {}
    public var platform: Platform { .web }

    /// A subscription's endpoint.
    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        try WebPushTokenRule().token(text, kind: kind)
    }

    public var settingsBlock: PushServiceSettingsBlock? { PushServiceSettingsBlock(key: "vapid", variables: VAPIDSettings.fileKeys) }

    public var variables: Set<String> {
        Set(VAPIDSettings.fileKeys.values).union(["HERALD_WEBPUSH_ALLOW_HOSTS", "HERALD_WEBPUSH_CA_FILE", "HERALD_WEBPUSH_TRUSTED_SERVICES"])
    }

    /// The `HERALD_VAPID_*` variables, the key loaded.
    public func appSettings(from variables: [String: String], source: PushServiceSettingsSource) throws -> VAPIDSettings? {
        guard let settings = try VAPIDSettings.fromEnvironment(variables) else {
            guard source == .file else { return nil }
            throw HeraldConfigurationError(field: "HERALD_VAPID_PRIVATE_KEY_PATH", message: "is required")
        }
        return settings
    }

    /// `HERALD_WEBPUSH_*`: where Web Push may be sent and which extra roots to trust.
    public func instanceSettings(from environment: [String: String]) throws -> WebPushSettings {
        try WebPushSettings(environment: environment)
    }

    /// One client for every app, and each app's VAPID key (an ephemeral one for an app without).
    public func makeShared(
        for apps: [PushServiceApp<VAPIDSettings>], instanceSettings: WebPushSettings, simulated: WebPushSimulated?, eventLoopGroup: MultiThreadedEventLoopGroup
    ) throws -> WebPushShared {
        try WebPushShared(apps: apps, settings: instanceSettings, simulated: simulated, eventLoopGroup: eventLoopGroup)
    }

    /// A browser registers its subscription, checked by the shared SSRF rule.
    public func registrationRule(shared: WebPushShared) -> any DeviceRegistrationRule {
        WebPushRegistrationRule(endpointGuard: shared.endpointGuard)
    }

    /// Each app's VAPID public key, as browsers take it (`applicationServerKey`).
    public func subscriptionKeys(shared: WebPushShared) -> [String: String] { shared.vapidPublicKeys }

    /// One encrypted record's plaintext, and a body only the browser reads.
    public var carriage: PushCarriage { PushCarriage(maximumPayload: { _ in WebPushEncryption.maximumPlaintext }, bodyReachesOnlyTheDevice: true) }

    /// Matrix pushers of `type: webpush`.
    public var matrixPusher: (any MatrixPusher)? { BuiltInMatrixPusher.webPush }

    public func makeProvider(for app: PushServiceApp<VAPIDSettings>, context: PushServiceContext<Self>) throws -> any PushProvider {
        let shared = context.shared
        guard let vapid = shared.vapid[app.id] else {
            throw HeraldConfigurationError(field: "HERALD_VAPID_PRIVATE_KEY_PATH", message: "app \(app.id) has no VAPID key")
        }
        return WebPushProvider(client: shared.client, signer: VAPIDSigner(key: vapid.key, subject: vapid.subject), trusted: shared.trusted)
    }

    /// Every app's provider shares one client: its connections, counted once.
    public func connectionsOpen(_ providers: [any PushProvider], shared: WebPushShared) -> Int {
        shared.client.connectionsOpen
    }

    public var sendingWithoutSettings: String { "simulator (ephemeral VAPID key)" }

    /// Apps without a VAPID key sign with an ephemeral one and get a Web Push simulator.
    public func startSimulator(
        for apps: [PushServiceApp<VAPIDSettings>], eventLoopGroup: MultiThreadedEventLoopGroup
    ) async throws -> RunningSimulator<WebPushSimulated>? {
        let apps = apps.filter { $0.serviceSettings == nil }
        guard !apps.isEmpty else { return nil }
        var configuration = WebPushSimulator.Configuration()
        configuration.controlPort = nil
        let sim = try await WebPushSimulator.start(configuration: configuration)
        let simulator = BuiltInSimulator(
            name: "webpush", address: "\(sim.origin)",
            warning:
                "No VAPID key (HERALD_VAPID_*): these apps sign Web Push with an EPHEMERAL key, so browser subscriptions made with it end when Herald restarts; a built-in Web Push simulator is running",
            apps: apps.map(\.id), readinessName: "built-in Web Push simulator listening", isListening: { sim.isListening },
            control: sim.control, stop: { await sim.shutdown() })
        return RunningSimulator(simulator, handle: WebPushSimulated(simulator: sim, host: "\(configuration.host):\(sim.port)"))
    }
}

/// The built-in Web Push simulator and its own address: the one inside address Herald sends to
/// without being told.
public struct WebPushSimulated: Sendable {
    let simulator: WebPushSimulator
    let host: String
}

/// What every app's Web Push provider shares, and what registration needs of it: the SSRF rule
/// (the built-in simulator's address allowed), the client, and each app's VAPID key (an ephemeral
/// one for an app without).
public struct WebPushShared: Sendable {
    let endpointGuard: WebPushEndpointGuard
    let client: WebPushClient
    let vapid: [String: VAPIDSettings]
    /// Whose refusals may pause an app: the operator's list, and the built-in simulator.
    let trusted: TrustedPushServices

    init(apps: [PushServiceApp<VAPIDSettings>], settings: WebPushSettings, simulated: WebPushSimulated?, eventLoopGroup group: MultiThreadedEventLoopGroup) throws {
        var allowHosts = settings.allowHosts
        var trusted = settings.trusted
        if let simulated {
            allowHosts.insert(simulated.host)
            trusted.insert(simulated.host)
        }
        self.trusted = trusted
        endpointGuard = WebPushEndpointGuard(policy: WebPushAddressPolicy(allowedHosts: allowHosts))
        var configuration = WebPushClientConfiguration(endpointGuard: endpointGuard)
        configuration.trustRootsPEMFiles = settings.caFile.map { [$0] } ?? []
        // The built-in simulators' CAs are trusted from memory: nothing is written to the temporary directory.
        configuration.trustRootsPEM = simulated.map { [$0.simulator.tls.caPEM] } ?? []
        client = try WebPushClient(configuration: configuration, eventLoopGroup: group, logger: Logger(label: "herald.webpush"))
        var vapid: [String: VAPIDSettings] = [:]
        for app in apps {
            vapid[app.id] = try app.serviceSettings
                ?? VAPIDSettings(key: VAPIDKey(privateKey: .init()), subject: VAPIDSubject(VAPIDSettings.developmentSubject))
        }
        self.vapid = vapid
    }

    /// Each app's VAPID public key, as browsers take it (`applicationServerKey`).
    var vapidPublicKeys: [String: String] { vapid.mapValues(\.key.applicationServerKey) }
}
