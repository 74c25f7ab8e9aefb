import HeraldPushCore

/// When to try a delivery again: exponential back-off with full jitter,
/// base 1 s, cap 10 minutes, and never sooner than the server's Retry-After.
public struct RetryPolicy: Hashable, Sendable {
    public var base: Duration
    public var cap: Duration

    public init(base: Duration = .seconds(1), cap: Duration = .seconds(600)) {
        self.base = base
        self.cap = cap
    }

    /// The wait before attempt `attempt + 1`, after `attempt` failures (1 for the first).
    /// - Parameters:
    ///   - retryAfter: the server's `Retry-After`, a floor.
    ///   - random: a uniform draw in [0, 1); tests pass a fixed one.
    public func delay(afterAttempt attempt: Int, retryAfter: Duration? = nil, random: Double) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let ceiling = min(base.seconds * Double(1 << exponent), cap.seconds)
        let jittered = Duration.milliseconds(Int64(ceiling * min(max(random, 0), 1) * 1000))
        guard let retryAfter else { return jittered }
        return max(jittered, retryAfter)
    }

    /// The same, drawing from the system's random source.
    public func delay(afterAttempt attempt: Int, retryAfter: Duration? = nil) -> Duration {
        delay(afterAttempt: attempt, retryAfter: retryAfter, random: Double.random(in: 0..<1))
    }
}
