public import Foundation
public import HeraldCore
public import HeraldPushCore
public import HeraldStore
import KasiaProtocol
public import Logging
public import ServiceLifecycle

/// Turns fan-out jobs into deliveries a page at a time (issue 59): an event to a large audience
/// commits with a job instead of a delivery per device, and this reads the job's watchers in
/// device order, keeps those its route reaches (the platforms with a provider, not excluded, a
/// Kasia event's routing, each device once over the job's keys) and commits their deliveries with
/// the job's new cursor in one transaction. A page goes only when the app's lanes have room for
/// it, so the store never holds more of a job's deliveries than its lanes send next, and an event
/// published meanwhile goes out beside it. `kill -9` loses nothing: the cursor and the page's
/// deliveries commit together; leased deliveries come back after their lease, as any do.
public final class FanoutExpander: Service, Sendable {
    let store: any FanoutQueue & DeviceRegistry
    let apps: AppDirectory
    let outbox: Outbox
    /// The platforms with a provider (as the publisher's).
    let platforms: Set<Platform>
    /// Watchers a page reads at most.
    public let pageSize: Int
    let clock: any HeraldClock
    let logger: Logger
    private let wakeup = Wakeup()
    /// How often the store is looked at for jobs with none known here (another instance's, or
    /// one left by a restart), and how soon lanes with no room are looked at again.
    static let poll: Duration = .seconds(1)
    static let roomPoll: Duration = .milliseconds(5)
    /// Jobs a round expands a page of each, oldest first.
    static let jobsPerRound = 16
    /// The default page.
    public static let defaultPageSize = 1_000

    public init(
        store: any FanoutQueue & DeviceRegistry, apps: AppDirectory, outbox: Outbox, platforms: Set<Platform>,
        pageSize: Int = FanoutExpander.defaultPageSize, clock: any HeraldClock = SystemClock(), logger: Logger = Logger(label: "herald.fanout")
    ) {
        self.store = store
        self.apps = apps
        self.outbox = outbox
        self.platforms = platforms
        self.pageSize = max(1, pageSize)
        self.clock = clock
        self.logger = logger
    }

    /// A job was committed: look now.
    public func jobCommitted() { wakeup.signal() }

    /// What a round did.
    public enum Round: Equatable, Sendable {
        /// No unfinished job.
        case idle
        /// Jobs wait for their lanes' room.
        case waiting
        /// Pages were committed (their deliveries, by job).
        case expanded(Int)
    }

    /// One page of each unfinished job (oldest first) whose lanes have room.
    @discardableResult
    public func round() async throws -> Round {
        let jobs = try await store.openFanouts(limit: Self.jobsPerRound)
        guard !jobs.isEmpty else { return .idle }
        var made: Int?
        for job in jobs {
            let limit: Int
            if let room = outbox.room(app: job.app) {
                // Half a lane (or half a page) free at least: pages stay large, and a lane is never starved.
                guard room.free * 2 >= min(room.capacity, pageSize) else { continue }
                limit = min(room.free, pageSize)
            } else {
                limit = pageSize  // every lane paused: the deliveries wait in the store
            }
            // The last page still waiting in the store (a store whose lanes claim for themselves,
            // or lanes that could not take it): the next waits, so the backlog stays a page.
            let limitOrOne = max(1, limit)
            guard try await store.unclaimedDeliveries(app: job.app, limit: limitOrOne, now: clock.now()) < limitOrOne else { continue }
            guard let added = try await expandPage(of: job, limit: limitOrOne) else { continue }
            made = (made ?? 0) + added
        }
        return made.map(Round.expanded) ?? .waiting
    }

    /// Reads and commits the next page of `job`; the deliveries made, or nil when another writer
    /// took the page first.
    func expandPage(of job: FanoutJob, limit: Int) async throws -> Int? {
        let from = job.cursor
        guard from.keyIndex < job.route.keys.count else {
            return try await commit(job, from: from, to: from, finished: true, devices: [], watchers: nil)
        }
        let key = job.route.keys[from.keyIndex]
        let candidates = try await store.fanoutCandidates(app: job.app, key: key, after: from.row, limit: limit)
        let lastKey = from.keyIndex + 1 >= job.route.keys.count
        let to = candidates.exhausted ? FanoutCursor(keyIndex: from.keyIndex + 1, row: 0) : FanoutCursor(keyIndex: from.keyIndex, row: candidates.through)
        var watchers: Int?
        if job.devices == nil && from == .start {
            // Counted once, for the progress a publisher reads (any app's watchers: an estimate
            // until the job finishes and its count becomes exact).
            var total = 0
            for key in job.route.keys { total += try await store.watcherCount(key: key, limit: Int(Int32.max)) }
            watchers = total
        }
        let devices = try await reached(candidates.devices, job: job, keyIndex: from.keyIndex)
        return try await commit(job, from: from, to: to, finished: candidates.exhausted && lastKey, devices: devices, watchers: watchers)
    }

    private func commit(
        _ job: FanoutJob, from: FanoutCursor, to: FanoutCursor, finished: Bool, devices: [DeviceRecord], watchers: Int?
    ) async throws -> Int? {
        let now = clock.now()
        guard let result = try await store.expand(
            job, from: from, to: to, finished: finished, devices: devices, watchers: watchers, now: now,
            claim: outbox.directClaim(apps: [job.app]))
        else { return nil }
        outbox.enqueued(result, now: now)
        if finished { logger.debug("fan-out expanded", metadata: ["app": "\(job.app)", "event": "\(job.eventID)"]) }
        return result.created[job.eventID] ?? 0
    }

    /// The candidates the job's route reaches, in row order.
    func reached(_ candidates: [DeviceRecord], job: FanoutJob, keyIndex: Int) async throws -> [DeviceRecord] {
        let excluded = Set(job.route.excludedDeviceIDs)
        var devices = candidates.filter { platforms.contains($0.platform) && !($0.deviceID.map(excluded.contains) ?? false) }
        if let kasia = job.route.kasia, !devices.isEmpty {
            // Under the wallet policy only what a device proved (its own addresses) and its routes
            // count. What each device has of the event's address decides it (not its whole watch set).
            let proven: Bool = if case .wallet = apps[job.app]?.registration { true } else { false }
            let facts = try await store.kasiaRoutingFacts(rowIDs: devices.map(\.rowID), key: job.route.keys[keyIndex])
            devices = devices.filter { KasiaRouting.accepts(kasia, facts: facts[$0.rowID] ?? KasiaRoutingFacts(), proven: proven) }
        }
        let earlier = Set(job.route.keys.prefix(keyIndex))
        if !earlier.isEmpty, !devices.isEmpty {
            let sets = try await store.watchSets(rowIDs: devices.map(\.rowID))
            // A device an earlier key reached has its delivery already.
            devices = devices.filter { device in
                guard let set = sets[device.rowID] else { return true }
                // As the store keeps them: watch keys by description, own addresses and route peers by address.
                return !set.watched.contains { earlier.contains($0.description) } && !set.own.contains { earlier.contains($0.string) }
                    && !set.routes.keys.contains { earlier.contains($0.string) }
            }
        }
        return devices
    }

    /// Expands while there are jobs; sleeps while there are none (until one is committed, or
    /// `poll`) or their lanes are full.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                var wait = Self.poll
                do {
                    switch try await self.round() {
                    case .idle: wait = Self.poll
                    case .waiting: wait = Self.roomPoll
                    case .expanded: continue
                    }
                } catch is CancellationError {
                    return
                } catch {
                    self.logger.warning("fan-out could not expand now; trying again", metadata: ["error": "\(error)"])
                }
                await self.wakeup.wait(timeout: wait, clock: self.clock)
            }
        }
    }
}
