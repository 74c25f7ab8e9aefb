import HeraldCore
public import HeraldDelivery
public import HeraldPushCore
public import HeraldStore
public import NIOPosix

/// A push service with its settings read, whatever its types: what the composition root holds of
/// each service until it is assembled into providers.
public protocol ConfiguredPushService: Sendable {
    /// The service's platform.
    var platform: Platform { get }

    /// How `app` sends to this service, for `/readyz` and `/v1/stats` ("credentials", or the
    /// service's way without them); nil for a service without settings.
    func sending(app: String) -> String?

    /// Starts the service's built-in simulator (for the apps without settings of it), makes what
    /// its providers share and each app's provider, in `apps`' order.
    func assemble(apps: [AppSettings], store: any Store, eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> AssembledPushService
}

/// One push service with what was read for it, in the service's own types: the instance's
/// settings and each app's.
public struct PushServiceConfiguration<Service: PushService>: ConfiguredPushService {
    public let service: Service
    public let instanceSettings: Service.InstanceSettings
    /// Each app's settings of the service, by app id (an app without: the built-in simulator).
    public let appSettings: [String: Service.AppServiceSettings]

    public init(service: Service, instanceSettings: Service.InstanceSettings, appSettings: [String: Service.AppServiceSettings]) {
        self.service = service
        self.instanceSettings = instanceSettings
        self.appSettings = appSettings
    }

    public var platform: Platform { service.platform }

    public func sending(app: String) -> String? {
        guard service.settingsBlock != nil else { return nil }
        return appSettings[app] == nil ? service.sendingWithoutSettings : "credentials"
    }

    public func assemble(apps: [AppSettings], store: any Store, eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> AssembledPushService {
        let apps = apps.map { PushServiceApp(settings: $0, serviceSettings: appSettings[$0.id]) }
        let running = try await service.startSimulator(for: apps, eventLoopGroup: eventLoopGroup)
        do {
            return try providers(for: apps, simulated: running?.handle, simulator: running?.simulator, store: store, eventLoopGroup: eventLoopGroup)
        } catch {
            await running?.simulator.stop()
            throw error
        }
    }

    /// What the providers share, and each app's provider.
    private func providers(
        for apps: [PushServiceApp<Service.AppServiceSettings>], simulated: Service.Simulated?, simulator: BuiltInSimulator?, store: any Store,
        eventLoopGroup: MultiThreadedEventLoopGroup
    ) throws -> AssembledPushService {
        let service = self.service
        let shared = try service.makeShared(for: apps, instanceSettings: instanceSettings, simulated: simulated, eventLoopGroup: eventLoopGroup)
        let context = PushServiceContext<Service>(store: store, eventLoopGroup: eventLoopGroup, simulated: simulated, shared: shared)
        var providers: [(app: String, provider: any PushProvider)] = []
        for app in apps { providers.append((app.id, try service.makeProvider(for: app, context: context))) }
        let all = providers.map(\.provider)
        return AssembledPushService(
            platform: service.platform, carriage: service.carriage, simulator: simulator, providers: providers, registrationRule: service.registrationRule(shared: shared),
            subscriptionKeys: service.subscriptionKeys(shared: shared), connectionsOpen: { service.connectionsOpen(all, shared: shared) })
    }
}

/// A push service made ready to send: its built-in simulator when one runs, each app's provider,
/// the rule registration checks its tokens against, and what its connections count.
public struct AssembledPushService: Sendable {
    public let platform: Platform
    /// What the service carries, for signing and sealing.
    public let carriage: PushCarriage
    public let simulator: BuiltInSimulator?
    /// Each app's provider, in the apps' order.
    public let providers: [(app: String, provider: any PushProvider)]
    public let registrationRule: any DeviceRegistrationRule
    /// The key a client of each app subscribes with, by app id (Web Push: the VAPID public key).
    public let subscriptionKeys: [String: String]
    /// Connections open to the service across its providers (`herald_provider_connections_open`).
    public let connectionsOpen: @Sendable () -> Int
}

extension PushServiceRegistry {
    /// Reads each service's settings: the instance's from `environment`, and each app's from the
    /// variables `variables` gives for it (nil: none, as for a file's app without the service's
    /// block), letting the service set what the app's neutral settings take from them. A
    /// setting a service refuses is reported as `refusal` names it (a file: the block's key).
    public func configure(
        apps: inout [AppSettings], environment: [String: String], source: PushServiceSettingsSource,
        variables: (_ app: Int, any PushService) throws -> [String: String]?,
        refusal: (_ app: Int, any PushService, HeraldConfigurationError) -> any Error = { $2 }
    ) throws -> [any ConfiguredPushService] {
        func configure<Service: PushService>(_ service: Service) throws -> any ConfiguredPushService {
            let instance = try service.instanceSettings(from: environment)
            var read: [String: Service.AppServiceSettings] = [:]
            for index in apps.indices {
                let given = try variables(index, service)
                do {
                    let settings = try given.flatMap { try service.appSettings(from: $0, source: source) }
                    read[apps[index].id] = settings
                    try service.configure(&apps[index], settings: settings, variables: given ?? [:], source: source)
                } catch let failure as HeraldConfigurationError {
                    throw refusal(index, service, failure)
                }
            }
            return PushServiceConfiguration(service: service, instanceSettings: instance, appSettings: read)
        }
        return try services.map { try configure($0) }
    }
}
