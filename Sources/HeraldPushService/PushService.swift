import HeraldCore
import HeraldDelivery
import HeraldMatrix
import HeraldPushCore
import NIOPosix

/// One push service Herald delivers through, as Sygnal's pushkins are: its platform, the rule its
/// devices' tokens meet, its settings, and how an app's provider (and its built-in look-alike) is
/// made. Herald's own are `APNsService`, `FCMService` and `WebPushService`, each in its module;
/// another is a conformance of its own and one line in a `PushServiceRegistry`.
public protocol PushService: DeviceTokenRule {
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
    func appSettings(from variables: [String: String], source: PushServiceSettingsSource) throws -> (any Sendable)?

    /// What an app's neutral settings take from this service's (APNs: the topic, and whether the
    /// app's builds are production ones).
    /// - Throws: `HeraldConfigurationError` naming the variable at fault.
    func configure(_ app: inout AppSettings, settings: (any Sendable)?, variables: [String: String], source: PushServiceSettingsSource) throws

    /// The instance's settings of this service, for every app (Web Push: the hosts it may reach).
    /// - Throws: `HeraldConfigurationError` naming the variable at fault.
    func instanceSettings(from environment: [String: String]) throws -> (any Sendable)?

    /// What every app's provider of this service shares, made once before them (Web Push: one
    /// client and each app's VAPID key); nil when nothing is shared.
    func makeShared(for apps: [PushServiceApp], instanceSettings: (any Sendable)?, simulator: BuiltInSimulator?, eventLoopGroup: MultiThreadedEventLoopGroup) throws -> (any Sendable)?

    /// What registration checks this service's devices against, once `context` is made (the
    /// service itself by default; Web Push: its subscription rule with the SSRF guard).
    func registrationRule(context: PushServiceContext) -> any DeviceTokenRule

    /// The provider that delivers `app`'s pushes to this service's devices.
    func makeProvider(for app: PushServiceApp, context: PushServiceContext) throws -> any PushProvider

    /// Connections open to the service across its apps' `providers` (`herald_connections_open`).
    func connectionsOpen(_ providers: [any PushProvider], context: PushServiceContext) -> Int

    /// What it refuses in a rendered push when an event is published (APNs: Apple's rules); nil
    /// when it fits what it carries as it sends.
    var publishLimits: (any PushLimits)? { get }

    /// Its side of the Matrix push gateway (the `type` of a `matrix` entry), or nil for none.
    var matrixPusher: (any MatrixPusher)? { get }

    /// The JSON Schema of its `device_token` for the served OpenAPI document's `Registration`
    /// (nil: the built-in three, whose branches are in the document's file).
    var openAPITokenSchema: String? { get }

    /// Starts the service's built-in look-alike for those of `apps` that have no settings of it,
    /// or nil when none needs one (a service without a simulator: always nil).
    func startSimulator(for apps: [PushServiceApp], eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> BuiltInSimulator?

    /// How an app without settings of this service sends, for `/readyz` and `/v1/stats` ("simulator").
    var sendingWithoutSettings: String { get }

    /// `herald send`'s sender of `push` with the settings in `environment`, or nil when the
    /// service has no direct send.
    /// - Throws: `HeraldConfigurationError` or `DirectPushRefusal` naming the setting or option at fault.
    func directSender(for push: DirectPush, environment: [String: String], eventLoopGroup: MultiThreadedEventLoopGroup) throws -> (any DirectSender)?
}

extension PushService {
    /// A built-in platform's rule (`DeviceToken.init`); a service of another platform gives its
    /// own, or every token is refused.
    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        try DeviceToken(text, platform: platform, kind: kind)
    }

    /// A built-in platform's token kinds (`BuiltInTokenRule`: Android's take a Firebase
    /// Installation ID too); a plain token for another platform unless its service says more.
    public var tokenKinds: Set<DeviceToken.Kind> { BuiltInTokenRule(platform).tokenKinds }

    public var settingsBlock: PushServiceSettingsBlock? { nil }

    public var variables: Set<String> { Set(settingsBlock.map { Array($0.variables.values) } ?? []) }

    public func appSettings(from variables: [String: String], source: PushServiceSettingsSource) throws -> (any Sendable)? { nil }

    public func configure(_ app: inout AppSettings, settings: (any Sendable)?, variables: [String: String], source: PushServiceSettingsSource) throws {}

    public func instanceSettings(from environment: [String: String]) throws -> (any Sendable)? { nil }

    public func makeShared(
        for apps: [PushServiceApp], instanceSettings: (any Sendable)?, simulator: BuiltInSimulator?, eventLoopGroup: MultiThreadedEventLoopGroup
    ) throws -> (any Sendable)? { nil }

    public func registrationRule(context: PushServiceContext) -> any DeviceTokenRule { self }

    public func connectionsOpen(_ providers: [any PushProvider], context: PushServiceContext) -> Int {
        providers.reduce(0) { $0 + $1.stats.connectionsOpen }
    }

    public func startSimulator(for apps: [PushServiceApp], eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> BuiltInSimulator? {
        nil
    }

    public var openAPITokenSchema: String? { nil }

    public var matrixPusher: (any MatrixPusher)? { nil }

    public var publishLimits: (any PushLimits)? { nil }

    public var sendingWithoutSettings: String { "simulator" }

    public func directSender(for push: DirectPush, environment: [String: String], eventLoopGroup: MultiThreadedEventLoopGroup) throws -> (any DirectSender)? {
        nil
    }
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

    /// Each platform's registration rule, given each service's context.
    public func registrationRules(contexts: [Platform: PushServiceContext]) -> [Platform: any DeviceTokenRule] {
        Dictionary(services.compactMap { service in contexts[service.platform].map { (service.platform, service.registrationRule(context: $0)) } }) { first, _ in first }
    }
}
