import HeraldCore
public import HeraldDelivery
public import HeraldStore
public import NIOPosix

/// An app as one push service sees it: its neutral settings and that service's settings of it
/// (nil: none, so the built-in simulator).
public struct PushServiceApp<Settings: Sendable>: Sendable {
    public var id: String { settings.id }
    public var settings: AppSettings
    /// What the service's `appSettings(from:source:)` read for this app.
    public var serviceSettings: Settings?

    public init(settings: AppSettings, serviceSettings: Settings?) {
        self.settings = settings
        self.serviceSettings = serviceSettings
    }
}

/// What one service's providers have around them: the store (the credential ledger), the event
/// loops, its built-in simulator when it runs, and what its `makeShared` made.
public struct PushServiceContext<Service: PushService>: Sendable {
    public let store: any Store
    public let eventLoopGroup: MultiThreadedEventLoopGroup
    /// What the providers need of the running built-in simulator; nil when none runs.
    public let simulated: Service.Simulated?
    public let shared: Service.Shared

    public init(store: any Store, eventLoopGroup: MultiThreadedEventLoopGroup, simulated: Service.Simulated?, shared: Service.Shared) {
        self.store = store
        self.eventLoopGroup = eventLoopGroup
        self.simulated = simulated
        self.shared = shared
    }
}
