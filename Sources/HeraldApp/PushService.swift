import HeraldCore
import HeraldDelivery
import HeraldServer
import HeraldSimulatorSupport
import HeraldStore
import Logging
import NIOPosix

/// One push service Herald delivers through: its platform, the rule its devices' tokens meet,
/// and how an app's provider is made. Herald's own are `APNsService`, `FCMService` and
/// `WebPushService`; another is a conformance of its own and one line in a `PushServiceRegistry`.
public protocol PushService: DeviceTokenRule {
    /// The provider that delivers `app`'s pushes to this service's devices.
    func makeProvider(for app: PushServiceApp, context: PushServiceContext) throws -> any PushProvider
    /// Connections open to the service across its apps' `providers` (`herald_connections_open`).
    func connectionsOpen(_ providers: [any PushProvider], context: PushServiceContext) -> Int
    /// The JSON Schema of its `device_token` for the served OpenAPI document's `Registration`
    /// (nil: the built-in three, whose branches are in the document's file).
    var openAPITokenSchema: String? { get }
    /// Starts the service's built-in look-alike for those of `apps` that have no credentials of
    /// it, or nil when none needs one (a service without a simulator: always nil).
    func startSimulator(for apps: [PushServiceApp], eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> BuiltInSimulator?
}

extension PushService {
    /// A built-in platform's rule (`DeviceToken.init`); a service of another platform gives its
    /// own, or every token is refused.
    public func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        try DeviceToken(text, platform: platform, kind: kind)
    }

    public func connectionsOpen(_ providers: [any PushProvider], context: PushServiceContext) -> Int {
        providers.reduce(0) { $0 + $1.stats.connectionsOpen }
    }

    public func startSimulator(for apps: [PushServiceApp], eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> BuiltInSimulator? {
        nil
    }

    public var openAPITokenSchema: String? { nil }
}

/// The push services an instance delivers through, in order: registration accepts their
/// platforms, the publisher routes to their devices, and every app gets a lane per service.
public struct PushServiceRegistry: Sendable {
    public var services: [any PushService]

    public init(_ services: [any PushService]) { self.services = services }

    /// APNs, FCM and Web Push.
    public static let builtIn = PushServiceRegistry([APNsService(), FCMService(), WebPushService()])

    /// Their platforms, in order.
    public var platforms: [Platform] { services.map(\.platform) }

    /// The added services' token schemas, for the served OpenAPI document.
    public var openAPITokenSchemas: [String: String] {
        Dictionary(services.compactMap { service in service.openAPITokenSchema.map { (service.platform.rawValue, $0) } }) { first, _ in first }
    }

    /// Each platform's token rule, for registration.
    public var tokenRules: [Platform: any DeviceTokenRule] {
        Dictionary(services.map { ($0.platform, $0 as any DeviceTokenRule) }) { first, _ in first }
    }
}

/// An app as a push service sees it: its settings and, for the built-in services, its credentials.
public struct PushServiceApp: Sendable {
    public var id: String { configuration.settings.id }
    public var settings: AppSettings { configuration.settings }
    let configuration: ConfigFile.App
}

/// What the services of one application share: the store (the credential ledger), the event
/// loops, the built-in simulators, and the client every app's Web Push provider uses.
public struct PushServiceContext: Sendable {
    public let store: any Store
    public let eventLoopGroup: MultiThreadedEventLoopGroup
    let simulators: BuiltInSimulators
    let webPush: WebPushShared

    /// What `platform`'s built-in simulator gave its service, when it runs.
    public func simulator<Handle>(of platform: Platform, as: Handle.Type) -> Handle? {
        simulators.running[platform]?.handle as? Handle
    }
}

/// A push service's built-in look-alike, running for the apps without credentials of it.
public struct BuiltInSimulator: Sendable {
    /// Its name under `/simulators/` on the admin listener and in the readiness line (`apns`).
    public var name: String
    /// Where it listens, for the start-up warning.
    public var address: String
    /// The start-up warning: pushes go to it, not to the real service.
    public var warning: String
    /// The apps it stands in for.
    public var apps: [String]
    /// `/readyz`: it still accepts connections.
    public var readiness: ReadinessCheck
    /// Its control API.
    public var control: @Sendable (SimulatorControlCall) async -> SimulatorControlAnswer
    public var stop: @Sendable () async -> Void
    /// What the service's providers need of it (the service's own type).
    public var handle: any Sendable

    public init(
        name: String, address: String, warning: String, apps: [String], readiness: ReadinessCheck,
        control: @escaping @Sendable (SimulatorControlCall) async -> SimulatorControlAnswer, stop: @escaping @Sendable () async -> Void,
        handle: any Sendable
    ) {
        self.name = name
        self.address = address
        self.warning = warning
        self.apps = apps
        self.readiness = readiness
        self.control = control
        self.stop = stop
        self.handle = handle
    }
}
