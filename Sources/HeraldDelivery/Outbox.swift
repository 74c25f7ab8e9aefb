public import Foundation
public import HeraldCore
import HeraldPushCore
public import HeraldStore
public import Logging
public import ServiceLifecycle
import Synchronization

/// The outbox: one lane per app and push service, each a service that claims that app's due
/// deliveries to that service's devices, sends them through its provider, and records the
/// outcomes. Publishing never waits on it; a crash leaves leased deliveries that come back after
/// the lease.
public struct Outbox: Sendable {
    /// Each app's lanes (one per provider), in configuration order.
    public let lanes: [OutboxLane]
    /// Marks unclaimed deliveries past their expiration.
    public let expirySweep: ExpirySweep
    private let lanesByApp: [String: [OutboxLane]]
    private let lanesByKey: [LaneKey: OutboxLane]
    /// How long a claimed delivery belongs to this process.
    public let lease: Duration

    /// - Parameter providers: each app's providers (one per platform it delivers to).
    /// - Parameter dismissals: where the lanes read each device's recent dismissals, which ride
    ///   along in its sealed alerts; nil sends none.
    public init(
        queue: any DeliveryQueue, providers: [(app: String, providers: [any PushProvider])], settings: OutboxSettings = OutboxSettings(),
        clock: any HeraldClock = SystemClock(), logger: Logger = Logger(label: "herald.outbox"), metrics: HeraldMetrics? = nil,
        dismissals: (any DismissalLedger)? = nil
    ) {
        var lanes: [OutboxLane] = []
        for (app, appProviders) in providers {
            // One provider per platform: a second for the same platform would claim the same rows.
            var seen = Set<Platform>()
            // A platform without a provider still gets a lane: its deliveries fail with a reason
            // instead of waiting forever.
            let all = appProviders + Platform.builtIn.map { MissingProvider(platform: $0) }
            for provider in all where seen.insert(provider.platform).inserted {
                lanes.append(OutboxLane(
                    app: app, queue: queue, provider: provider, settings: settings, clock: clock, logger: logger, metrics: metrics,
                    dismissals: dismissals))
            }
        }
        self.lanes = lanes
        lanesByApp = Dictionary(grouping: lanes, by: \.app)
        lanesByKey = Dictionary(lanes.map { (LaneKey(app: $0.app, platform: $0.platform), $0) }) { first, _ in first }
        lease = settings.lease
        expirySweep = ExpirySweep(queue: queue, interval: settings.expirySweepInterval, clock: clock, logger: logger)
    }

    /// Tells `app`'s lane that new deliveries are waiting.
    public func notify(app: String) {
        for lane in lanesByApp[app] ?? [] { lane.notify() }
    }

    /// The lanes of `apps` that wait for work and take deliveries straight from a commit, or nil
    /// when none does.
    public func directClaim(apps: Set<String>) -> DirectClaim? {
        // Sized for an app's lanes up front: growing from empty rehashed the keys twice a commit.
        var lanes = [LaneKey: Int](minimumCapacity: apps.count * Platform.builtIn.count)
        for app in apps {
            for lane in lanesByApp[app] ?? [] {
                let count = lane.directClaimCapacity
                if count > 0 { lanes[LaneKey(app: app, platform: lane.platform)] = count }
            }
        }
        return lanes.isEmpty ? nil : DirectClaim(lanes: lanes, lease: lease)
    }

    /// How much `app`'s lanes can take now: the least room among its open lanes, and that lane's
    /// limit in flight (a paused lane takes nothing but waits; it is left out). Nil when the app
    /// has no open lane.
    public func room(app: String) -> (free: Int, capacity: Int)? {
        (lanesByApp[app] ?? []).filter { !$0.isPaused }.map { ($0.room, $0.maximumInFlight) }.min { $0.0 < $1.0 }
    }

    /// After a commit: hands each lane the deliveries leased to it and tells the lanes with
    /// pending deliveries to claim them.
    public func enqueued(_ result: EnqueueResult, now: Date) {
        let leaseUntil = now.addingTimeInterval(lease.seconds)
        func lane(_ delivery: ClaimedDelivery) -> LaneKey { LaneKey(app: delivery.device.app, platform: delivery.device.platform) }
        if let first = result.claimed.first.map(lane), result.claimed.allSatisfy({ lane($0) == first }) {
            // Most commits lease to one lane: handed off whole, without grouping by a hashed key.
            lanesByKey[first]?.handOff(result.claimed, leaseUntil: leaseUntil)
        } else {
            for (key, claimed) in Dictionary(grouping: result.claimed, by: lane) { lanesByKey[key]?.handOff(claimed, leaseUntil: leaseUntil) }
        }
        for key in result.pending { lanesByKey[key]?.notify() }
        for app in result.pendingApps { notify(app: app) }
    }

    /// Every service of the outbox: the lanes, then the expiry sweep.
    public var services: [any Service] { lanes + [expirySweep] }

    /// Runs every lane until the task is cancelled or a graceful shutdown (tests and benchmarks
    /// that run no service group).
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            for service in services {
                group.addTask { try? await service.run() }
            }
        }
    }
}
