extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
