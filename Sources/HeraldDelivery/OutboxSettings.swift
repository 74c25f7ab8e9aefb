public import HeraldCore
import HeraldPushCore

/// How the outbox claims, retries and pauses; shared by every app's lane.
public struct OutboxSettings: Sendable {
    /// When a failed delivery is tried again.
    public var retryPolicy = RetryPolicy()
    /// How long a claimed delivery belongs to this process; after a crash it returns after this.
    public var lease: Duration = .seconds(30)
    /// How long a lane with nothing due sleeps before it looks again (retries come due on their own).
    public var idleInterval: Duration = .milliseconds(200)
    /// How long an app's sends pause after its push service refuses freshly refreshed
    /// credentials; doubles on each further refusal up to the upper bound. One delivery probes
    /// when it ends.
    public var credentialsPause: ClosedRange<Duration> = .seconds(60) ... .seconds(1_200)
    /// How often unclaimed deliveries past their expiration are marked expired.
    public var expirySweepInterval: Duration = .seconds(10)
    /// Outcomes of small batches are recorded together, at most this late: at a few pushes at a
    /// time, one transaction (one WAL sync) for many outcomes instead of one each. A crash before
    /// they are recorded sends those pushes again after their lease; none is lost.
    public var outcomeDelay: Duration = .milliseconds(20)
    /// A lane records at once when it holds this many outcomes (a busy lane's batches are larger).
    public var outcomeBatch = 64

    public init() {}
}
