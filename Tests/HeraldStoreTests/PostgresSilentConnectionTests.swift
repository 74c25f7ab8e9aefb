import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldPushCore
import HeraldStore
import HeraldTestSupport
import Synchronization
import Testing

/// A connection the database never answers (a partition, or one left half-open by a server
/// restart) must not hold an outbox lane: its call gives up, and the next one works on a new
/// connection.
@Suite("PostgreSQL: a connection that never answers", .serialized, .enabled(if: TestPostgres.serverURL != nil))
struct PostgresSilentConnectionTests {
    private static let t0 = Date(timeIntervalSince1970: 1_760_000_000)

    /// The call's result, or nil when it is still waiting after `guardTime` (a hang, not a slow
    /// machine: the store's own deadlines are a fraction of it). Waits on the task from outside
    /// any task group, so a call that never ends fails the test instead of hanging it.
    private static func outcome<T: Sendable>(of task: Task<T, any Error>, guardTime: Duration = .seconds(90)) async -> Result<T, any Error>? {
        let first = FirstAnswer<Result<T, any Error>?>()
        return await withCheckedContinuation { continuation in
            first.start(continuation)
            Task { first.answer(await task.result) }
            Task {
                try? await Task.sleep(for: guardTime)
                first.answer(nil)
            }
        }
    }

    @Test("a claim sent on a connection that went silent gives up as store_unavailable, the next claim takes the delivery on a new one, and a cancelled call ends")
    func silentConnection() async throws {
        try await TestPostgres.withDatabase(serverURL: TestPostgres.serverURL!) { databaseURL in
            var components = try #require(URLComponents(string: databaseURL))
            let relay = try await SilentRelay.start(to: components.port ?? 5432)
            components.port = relay.port
            let store = try PostgresStore(url: try #require(components.string), laneAnswerDeadline: .seconds(2))
            let running = Task { await store.run() }
            defer { running.cancel() }
            try await store.migrate()
            let token = try APNsTokenRule().token(String(repeating: "ab", count: 32))
            let device = try await store.register(
                Registration(app: "kasia", token: token, attributes: DeviceAttributes(production: false), watchSet: try WatchSet(watched: [], own: [], routes: [])),
                now: Self.t0)
            let push = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
            _ = try await store.enqueue(
                [NewEvent(id: "e1", app: "kasia", template: "custom", push: push, expiresAt: Self.t0.addingTimeInterval(3_600), deviceRowIDs: [device.rowID])],
                checkpoint: nil, now: Self.t0)
            let claim: @Sendable () async throws -> [ClaimedDelivery] = {
                try await store.claimDue(app: "kasia", platform: .ios, limit: 10, now: Self.t0, lease: .seconds(30))
            }

            relay.silence()
            let hung = Task { try await claim() }
            for _ in 0..<400 where relay.swallowedBytes == 0 { try await Task.sleep(for: .milliseconds(25)) }
            #expect(relay.swallowedBytes > 0, "the claim was sent into the silence")
            relay.resume()
            switch await Self.outcome(of: hung) {
            case nil: Issue.record("the claim still waits on a connection the database never answers")
            case .success(let claimed): Issue.record("a claim on a silent connection answered \(claimed)")
            case .failure(let error): #expect(error is StoreUnavailable, "\(error)")
            }
            // The database never saw the silenced claim: the delivery is still due, for a claim on
            // a new connection once the pool has let the closed one go (its TLS shutdown waits a
            // few seconds for a peer that never answers), as a lane tries again after a pause.
            var claimed: [ClaimedDelivery] = []
            for _ in 0..<60 where claimed.isEmpty {
                guard let answer = await Self.outcome(of: Task { try await claim() }) else {
                    Issue.record("a claim after the silence still waits")
                    break
                }
                claimed = (try? answer.get()) ?? []
                if claimed.isEmpty { try await Task.sleep(for: .milliseconds(500)) }
            }
            #expect(claimed.map(\.device.rowID) == [device.rowID])

            // Shutdown: a call cancelled while its query goes unanswered still ends.
            relay.silence()
            let swallowed = relay.swallowedBytes
            let cancelled = Task { try await store.expire(now: Self.t0) }
            for _ in 0..<400 where relay.swallowedBytes == swallowed { try await Task.sleep(for: .milliseconds(25)) }
            cancelled.cancel()
            let ended = await Self.outcome(of: cancelled)
            #expect(ended != nil, "a cancelled call still waits on a silent connection")
            await relay.close()
        }
    }
}

/// The first of several answers resumes the waiting continuation; the rest are dropped.
private final class FirstAnswer<Value: Sendable>: Sendable {
    private let state = Mutex<(CheckedContinuation<Value, Never>?, Value?, Bool)>((nil, nil, false))

    func start(_ continuation: CheckedContinuation<Value, Never>) {
        let early: Value?? = state.withLock { s in
            if s.2 { return .some(s.1) }
            s.0 = continuation
            return nil
        }
        if let early { continuation.resume(returning: early!) }
    }

    func answer(_ value: Value) {
        let continuation: CheckedContinuation<Value, Never>? = state.withLock { s in
            guard !s.2 else { return nil }
            s.2 = true
            s.1 = value
            defer { s.0 = nil }
            return s.0
        }
        continuation?.resume(returning: value)
    }
}
