public import HeraldCore
public import HeraldDelivery
public import HeraldMatrix
public import HeraldPushCore
public import NIOPosix

/// One push service Herald delivers through, as Sygnal's pushkins are: its platform, the rule its
/// devices' tokens meet, its settings, and how an app's provider (and its built-in look-alike) is
/// made. Herald's own are `APNsService`, `FCMService` and `WebPushService`, each in its module;
/// another is a conformance of its own and one line in a `PushServiceRegistry`.
///
/// What a service reads and makes crosses the seam as its own types (the associated types), so
/// nothing is cast back: `PushServiceConfiguration` carries them from the settings to the providers.
public protocol PushService: DeviceTokenRule {
    /// One app's settings of this service (APNs: the signing key and topic); `Never` for none.
    associatedtype AppServiceSettings: Sendable = Never
    /// The instance's settings of this service, for every app (Web Push: the hosts it may reach).
    associatedtype InstanceSettings: Sendable = Void
    /// What every app's provider of this service shares, made once (Web Push: one client and the VAPID keys).
    associatedtype Shared: Sendable = Void
    /// What the providers need of the service's running built-in simulator (APNs: its hosts and keys).
    associatedtype Simulated: Sendable = Never

    /// Its block in an app of `HERALD_CONFIG` and the `HERALD_*` variable each of the block's keys
    /// stands for; nil: the service has no settings (every app gets its simulator, if any).
    var settingsBlock: PushServiceSettingsBlock? { get }

    /// Every `HERALD_*` variable it reads (its settings block's by default, and its instance
    /// settings'): `herald serve` refuses one that no service and no part of Herald names.
    var variables: Set<String> { get }

    /// One app's settings of this service from `variables` (the environment, or the app's block
    /// read as the variables its keys stand for); nil when none are set, so the app uses the
    /// built-in simulator.
    /// - Throws: `HeraldConfigurationError` naming the variable at fault.
    func appSettings(from variables: [String: String], source: PushServiceSettingsSource) throws -> AppServiceSettings?

    /// What an app's neutral settings take from this service's (APNs: the topic, and whether the
    /// app's builds are production ones).
    /// - Throws: `HeraldConfigurationError` naming the variable at fault.
    func configure(_ app: inout AppSettings, settings: AppServiceSettings?, variables: [String: String], source: PushServiceSettingsSource) throws

    /// The instance's settings of this service, for every app (Web Push: the hosts it may reach).
    /// - Throws: `HeraldConfigurationError` naming the variable at fault.
    func instanceSettings(from environment: [String: String]) throws -> InstanceSettings

    /// What every app's provider of this service shares, made once before them (Web Push: one
    /// client and each app's VAPID key).
    func makeShared(
        for apps: [PushServiceApp<AppServiceSettings>], instanceSettings: InstanceSettings, simulated: Simulated?, eventLoopGroup: MultiThreadedEventLoopGroup
    ) throws -> Shared

    /// What registration checks this service's devices against, given what its providers share
    /// (its token rule by default; Web Push: its subscription rule with the SSRF guard).
    func registrationRule(shared: Shared) -> any DeviceRegistrationRule

    /// The key a client of each app subscribes with, by app id (Web Push: the VAPID public key,
    /// as browsers take it); empty for a service whose clients need none.
    func subscriptionKeys(shared: Shared) -> [String: String]

    /// The provider that delivers `app`'s pushes to this service's devices.
    func makeProvider(for app: PushServiceApp<AppServiceSettings>, context: PushServiceContext<Self>) throws -> any PushProvider

    /// Connections open to the service across its apps' `providers` (`herald_provider_connections_open`).
    func connectionsOpen(_ providers: [any PushProvider], shared: Shared) -> Int

    /// What it refuses in a rendered push when an event is published (APNs: Apple's rules); nil
    /// when it fits what it carries as it sends.
    var publishLimits: (any PushLimits)? { get }

    /// What it carries, for signing and sealing (the largest payload per push type; whether its
    /// pushes' bodies reach only the device). By default 4 KiB of any push, body readable.
    var carriage: PushCarriage { get }

    /// Its side of the Matrix push gateway (the `type` of a `matrix` entry), or nil for none.
    var matrixPusher: (any MatrixPusher)? { get }

    /// The JSON Schema of its `device_token` for the served OpenAPI document's `Registration`
    /// (nil: the built-in three, whose branches are in the document's file).
    var openAPITokenSchema: String? { get }

    /// Starts the service's built-in look-alike for those of `apps` that have no settings of it,
    /// or nil when none needs one (a service without a simulator: always nil).
    func startSimulator(for apps: [PushServiceApp<AppServiceSettings>], eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> RunningSimulator<Simulated>?

    /// How an app without settings of this service sends, for `/readyz` and `/v1/stats` ("simulator").
    var sendingWithoutSettings: String { get }

    /// `herald send`'s sender of `push` with the settings in `environment`, or nil when the
    /// service has no direct send.
    /// - Throws: `HeraldConfigurationError` or `DirectPushRefusal` naming the setting or option at fault.
    func directSender(for push: DirectPush, environment: [String: String], eventLoopGroup: MultiThreadedEventLoopGroup) throws -> (any DirectSender)?
}

extension PushService {
    public var settingsBlock: PushServiceSettingsBlock? { nil }

    public var variables: Set<String> { Set(settingsBlock.map { Array($0.variables.values) } ?? []) }

    public func appSettings(from variables: [String: String], source: PushServiceSettingsSource) throws -> AppServiceSettings? { nil }

    public func configure(_ app: inout AppSettings, settings: AppServiceSettings?, variables: [String: String], source: PushServiceSettingsSource) throws {}

    public func registrationRule(shared: Shared) -> any DeviceRegistrationRule { TokenRegistrationRule(self) }

    public func subscriptionKeys(shared: Shared) -> [String: String] { [:] }

    public func connectionsOpen(_ providers: [any PushProvider], shared: Shared) -> Int {
        providers.reduce(0) { $0 + $1.stats.connectionsOpen }
    }

    public func startSimulator(
        for apps: [PushServiceApp<AppServiceSettings>], eventLoopGroup: MultiThreadedEventLoopGroup
    ) async throws -> RunningSimulator<Simulated>? {
        nil
    }

    public var openAPITokenSchema: String? { nil }

    public var matrixPusher: (any MatrixPusher)? { nil }

    public var publishLimits: (any PushLimits)? { nil }

    public var carriage: PushCarriage { .upTo(RenderedPush.maximumAlertSize) }

    public var sendingWithoutSettings: String { "simulator" }

    public func directSender(for push: DirectPush, environment: [String: String], eventLoopGroup: MultiThreadedEventLoopGroup) throws -> (any DirectSender)? {
        nil
    }
}

extension PushService where InstanceSettings == Void {
    public func instanceSettings(from environment: [String: String]) throws {}
}

extension PushService where Shared == Void {
    public func makeShared(
        for apps: [PushServiceApp<AppServiceSettings>], instanceSettings: InstanceSettings, simulated: Simulated?, eventLoopGroup: MultiThreadedEventLoopGroup
    ) throws {}
}

/// The push services an instance delivers through, in order: registration accepts their
/// platforms, the publisher routes to their devices, and every app gets a lane per service.
public struct PushServiceRegistry: Sendable {
    public var services: [any PushService]

    public init(_ services: [any PushService]) { self.services = services }

    /// Their platforms, in order.
    public var platforms: [Platform] { services.map(\.platform) }

    /// The service of `platform`, if registered.
    public func service(of platform: Platform) -> (any PushService)? {
        services.first { $0.platform == platform }
    }

    /// The added services' token schemas, for the served OpenAPI document.
    public var openAPITokenSchemas: [String: String] {
        Dictionary(services.compactMap { service in service.openAPITokenSchema.map { (service.platform.rawValue, $0) } }) { first, _ in first }
    }

    /// Its services' publish-time limits, in order.
    public var publishLimits: [any PushLimits] { services.compactMap(\.publishLimits) }

    /// The Matrix pushers of its services, in order.
    public var matrixPushers: [any MatrixPusher] { services.compactMap(\.matrixPusher) }
}
