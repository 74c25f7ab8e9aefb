import HeraldCore
import HeraldDelivery
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
/// loops, and the built-in simulators and shared clients of Herald's own services.
public struct PushServiceContext: Sendable {
    public let store: any Store
    public let eventLoopGroup: MultiThreadedEventLoopGroup
    let simulators: BuiltInSimulators
    let webPush: WebPushShared
}
