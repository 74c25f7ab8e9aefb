public import HeraldSimulatorSupport

/// A push service's built-in look-alike, running for the apps without settings of it.
public struct BuiltInSimulator: Sendable {
    /// Its name under `/simulators/` on the admin listener and in the readiness line (`apns`).
    public var name: String
    /// Where it listens, for the start-up warning.
    public var address: String
    /// The start-up warning: pushes go to it, not to the real service.
    public var warning: String
    /// The apps it stands in for.
    public var apps: [String]
    /// `/readyz`'s name for its check ("built-in APNs simulator listening").
    public var readinessName: String
    /// Whether it still accepts connections.
    public var isListening: @Sendable () -> Bool
    /// Its control API.
    public var control: @Sendable (SimulatorControlCall) async -> SimulatorControlAnswer
    public var stop: @Sendable () async -> Void

    public init(
        name: String, address: String, warning: String, apps: [String], readinessName: String, isListening: @escaping @Sendable () -> Bool,
        control: @escaping @Sendable (SimulatorControlCall) async -> SimulatorControlAnswer, stop: @escaping @Sendable () async -> Void
    ) {
        self.name = name
        self.address = address
        self.warning = warning
        self.apps = apps
        self.readinessName = readinessName
        self.isListening = isListening
        self.control = control
        self.stop = stop
    }
}

/// A started built-in simulator: what the operator sees of it, and what the service's providers
/// need of it, as the service's own type.
public struct RunningSimulator<Handle: Sendable>: Sendable {
    public var simulator: BuiltInSimulator
    public var handle: Handle

    public init(_ simulator: BuiltInSimulator, handle: Handle) {
        self.simulator = simulator
        self.handle = handle
    }
}
