import Foundation
import HeraldCore
import HeraldDelivery
import HeraldPushCore
import HeraldStore
import Synchronization

/// A `DeliveryQueue` in memory with the stores' rules (claims with leases, retries, expiry, dead
/// tokens), so lane tests run in milliseconds.
final class InMemoryDeliveryQueue: DeliveryQueue {
    struct Row: Sendable {
        var id: Int64
        var eventID: String
        var device: DeviceRecord
        var push: RenderedPush
        var apnsID = UUID()
        var attempts = 0
        var expiresAt: Date
        var state: DeliveryState = .pending
        var nextAttemptAt: Date
        var leaseUntil: Date?
        var reason: String?
        var acceptedAt: Date?
    }
    private struct State {
        var devices: [Int64: DeviceRecord] = [:]
        var rows: [Int64: Row] = [:]
        var nextID: Int64 = 1
        var completions = 0
        var claims = 0
    }
    private let state = Mutex(State())
    /// Like GRDB and PostgresNIO, refuse to record outcomes from a cancelled task.
    let refusesCancelledCalls: Bool

    init(refusesCancelledCalls: Bool = false) {
        self.refusesCancelledCalls = refusesCancelledCalls
    }

    /// Adds `count` devices of `app`; returns their records.
    func addDevices(app: String, count: Int, now: Date, platform: Platform = .ios) -> [DeviceRecord] {
        state.withLock { s in
            (0..<count).map { _ in
                let id = s.nextID
                s.nextID += 1
                let hex = String(id, radix: 16)
                let device = DeviceRecord(
                    rowID: id, app: app, platform: platform, token: String(repeating: "0", count: 64 - hex.count) + hex,
                    attributes: DeviceAttributes(production: false), createdAt: now, updatedAt: now, lastSeen: now)
                s.devices[id] = device
                return device
            }
        }
    }

    /// Like SQLite: a `DirectClaim`'s lanes get their deliveries leased at once, up to their count.
    func enqueue(_ events: [NewEvent], checkpoint: ChainCheckpoint?, now: Date, claim: DirectClaim?) async throws -> EnqueueResult {
        state.withLock { s in
            var result = EnqueueResult(created: [:], pending: [])
            var budget = claim?.lanes ?? [:]
            for event in events {
                for row in event.deviceRowIDs {
                    guard let device = s.devices[row] else { continue }
                    let id = s.nextID
                    s.nextID += 1
                    var new = Row(id: id, eventID: event.id, device: device, push: event.push, expiresAt: event.expiresAt, nextAttemptAt: now)
                    new.acceptedAt = now
                    let lane = LaneKey(app: event.app, platform: device.platform)
                    if let claim, let left = budget[lane], left > 0 {
                        budget[lane] = left - 1
                        new.state = .sending
                        new.attempts = 1
                        new.leaseUntil = now.addingTimeInterval(claim.lease.seconds)
                        result.claimed.append(ClaimedDelivery(
                            id: id, eventID: event.id, device: device, push: event.push, apnsID: new.apnsID, attempt: 1, expiresAt: event.expiresAt,
                            acceptedAt: now))
                    } else {
                        result.pending.insert(lane)
                    }
                    s.rows[id] = new
                    result.created[event.id, default: 0] += 1
                }
            }
            return result
        }
    }

    func claimDue(app: String, platform: Platform, limit: Int, now: Date, lease: Duration) async throws -> [ClaimedDelivery] {
        state.withLock { s in
            s.claims += 1
            let due = s.rows.values.filter { row in
                guard row.device.app == app, row.device.platform == platform else { return false }
                switch row.state {
                case .pending: return row.nextAttemptAt <= now
                case .sending: return (row.leaseUntil ?? now) <= now
                default: return false
                }
            }.sorted { ($0.nextAttemptAt, $0.id) < ($1.nextAttemptAt, $1.id) }.prefix(limit)
            return due.map { row in
                var row = row
                row.state = .sending
                row.attempts += 1
                row.leaseUntil = now.addingTimeInterval(lease.seconds)
                s.rows[row.id] = row
                return ClaimedDelivery(
                    id: row.id, eventID: row.eventID, device: row.device, push: row.push, apnsID: row.apnsID, attempt: row.attempts,
                    expiresAt: row.expiresAt, acceptedAt: row.acceptedAt)
            }
        }
    }

    func complete(_ outcomes: [DeliveryOutcome], now: Date) async throws {
        if refusesCancelledCalls, Task.isCancelled { throw CancellationError() }
        state.withLock { s in
            s.completions += 1
            func set(_ id: Int64, _ state: DeliveryState, _ reason: String?) {
                s.rows[id]?.state = state
                s.rows[id]?.reason = reason
                s.rows[id]?.leaseUntil = nil
            }
            for outcome in outcomes {
                switch outcome {
                case .sent(let id, _): set(id, .sent, nil)
                case .failed(let id, let reason): set(id, .failed, reason)
                case .expired(let id): set(id, .expired, "expired")
                case .retry(let id, let at, let reason):
                    set(id, .pending, reason)
                    s.rows[id]?.nextAttemptAt = at
                case .retryDevice(let id, let device, let at, let reason):
                    set(id, .pending, reason)
                    s.rows[id]?.nextAttemptAt = at
                    for (other, row) in s.rows where row.device.rowID == device && row.state == .pending && row.nextAttemptAt < at {
                        s.rows[other]?.nextAttemptAt = at
                    }
                case .tokenDead(let id, let device, _, let reason):
                    set(id, .failed, reason)
                    s.devices[device] = nil
                    for (other, row) in s.rows where row.device.rowID == device && [.pending, .sending].contains(row.state) {
                        s.rows[other]?.state = .dropped
                    }
                }
            }
        }
    }

    func expire(now: Date) async throws -> Int {
        state.withLock { s in
            let ids = s.rows.values.filter { $0.state == .pending && $0.expiresAt <= now }.map(\.id)
            for id in ids { s.rows[id]?.state = .expired }
            return ids.count
        }
    }

    /// Deliveries by state.
    func count(_ state: DeliveryState, app: String? = nil) -> Int {
        self.state.withLock { s in s.rows.values.filter { $0.state == state && (app == nil || $0.device.app == app) }.count }
    }

    func rows() -> [Row] { state.withLock { Array($0.rows.values) } }

    /// How many batches of outcomes were recorded.
    var completions: Int { state.withLock { $0.completions } }

    /// How many claim transactions lanes made.
    var claims: Int { state.withLock { $0.claims } }
}

/// A push provider whose answers a test scripts per token, and which can hold sends until released.
final class ScriptedProvider: PushProvider {
    let platform: Platform
    init(platform: Platform = .ios) { self.platform = platform }
    private struct State {
        /// Answers by token, used in order; the last one repeats.
        var script: [String: [PushOutcome]] = [:]
        var fallback: PushOutcome = .delivered
        /// Sends of these tokens wait until released.
        var held = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var sent: [(token: String, payload: [UInt8])] = []
        var inFlight = 0
    }
    private let state = Mutex(State())

    func script(_ token: String, _ outcomes: [PushOutcome]) { state.withLock { $0.script[token] = outcomes } }
    func answerEverything(_ outcome: PushOutcome) { state.withLock { $0.fallback = outcome } }

    /// From now on, sends wait until `release()`.
    func hold() { state.withLock { $0.held = true } }

    /// Sends from now on go through; those already held stay held until `release()`.
    func stopHolding() { state.withLock { $0.held = false } }

    func release() {
        let waiting = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.held = false
            defer { s.waiting = [] }
            return s.waiting
        }
        for c in waiting { c.resume() }
    }

    /// Sends that reached the provider (held ones included), in order.
    var sent: [(token: String, payload: [UInt8])] { state.withLock { $0.sent } }
    var inFlight: Int { state.withLock { $0.inFlight } }
    func sends(of token: String) -> Int { sent.filter { $0.token == token }.count }

    func send(_ delivery: ClaimedDelivery) async -> PushOutcome {
        let held = state.withLock { s -> Bool in
            s.sent.append((delivery.device.token, delivery.push.payload))
            s.inFlight += 1
            return s.held
        }
        if held {
            await withCheckedContinuation { c in
                let now = state.withLock { s -> Bool in
                    guard s.held else { return true }
                    s.waiting.append(c)
                    return false
                }
                if now { c.resume() }
            }
        }
        return state.withLock { s in
            s.inFlight -= 1
            guard var answers = s.script[delivery.device.token], !answers.isEmpty else { return s.fallback }
            let answer = answers.removeFirst()
            s.script[delivery.device.token] = answers.isEmpty ? [answer] : answers
            return answer
        }
    }
}
