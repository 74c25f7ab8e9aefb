import HeraldCore
import HeraldDelivery
import HeraldStore
import NIOPosix

/// An app as one push service sees it: its neutral settings and that service's settings of it
/// (nil: none, so the built-in simulator).
public struct PushServiceApp: Sendable {
    public var id: String { settings.id }
    public var settings: AppSettings
    /// What the service's `appSettings(from:source:)` read for this app.
    public var serviceSettings: (any Sendable)?

    public init(settings: AppSettings, serviceSettings: (any Sendable)?) {
        self.settings = settings
        self.serviceSettings = serviceSettings
    }

    /// The service's settings as its own type.
    public func serviceSettings<Settings>(as: Settings.Type) -> Settings? { serviceSettings as? Settings }
}

/// What one service's providers have around them: the store (the credential ledger), the event
/// loops, its built-in simulator when it runs, and what its `makeShared` made.
public struct PushServiceContext: Sendable {
    public let store: any Store
    public let eventLoopGroup: MultiThreadedEventLoopGroup
    public let simulator: BuiltInSimulator?
    public let shared: (any Sendable)?

    public init(store: any Store, eventLoopGroup: MultiThreadedEventLoopGroup, simulator: BuiltInSimulator?, shared: (any Sendable)?) {
        self.store = store
        self.eventLoopGroup = eventLoopGroup
        self.simulator = simulator
        self.shared = shared
    }
}
