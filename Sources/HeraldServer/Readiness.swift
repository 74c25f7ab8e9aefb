/// One thing `/readyz` checks besides the store, named as an operator reads it ("APNs simulator
/// listening").
public struct ReadinessCheck: Sendable {
    /// What is checked; `/readyz` names it when it fails.
    public var name: String
    /// Whether it holds now (called on every probe: keep it cheap).
    public var isReady: @Sendable () async -> Bool

    public init(_ name: String, isReady: @escaping @Sendable () async -> Bool) {
        self.name = name
        self.isReady = isReady
    }
}
