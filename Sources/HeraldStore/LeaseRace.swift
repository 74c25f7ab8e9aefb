import PostgresNIO
import Synchronization

/// Whether a leased call got its connection.
final class LeaseFlag: Sendable {
    let started = Atomic<Bool>(false)
}

/// A leased call with a deadline: the first of its answer, its deadline (while it has no
/// connection) and its cancellation settles it, once; the tasks still running are cancelled.
final class LeaseRace<R: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<R, any Error>?
        var result: Result<R, any Error>?
        var settled = false
        var connection: PostgresConnection?
        var tasks: [Task<Void, Never>] = []
    }
    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<R, any Error>) {
        let early: Result<R, any Error>? = state.withLock { s in
            if let result = s.result { return result }
            s.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func add(_ task: Task<Void, Never>) {
        let settled = state.withLock { s in
            if !s.settled { s.tasks.append(task) }
            return s.settled
        }
        if settled { task.cancel() }
    }

    /// The connection came: true when the call still waits for it (then the connection
    /// deadline no longer applies).
    func connected(_ connection: PostgresConnection) -> Bool {
        state.withLock { s in
            guard !s.settled else { return false }
            s.connection = connection
            return true
        }
    }

    var isConnected: Bool { state.withLock { $0.connection != nil } }

    /// The caller was cancelled: without a connection the call ends now; with one, its body is
    /// told and may end the call itself (what it wrote is not left half-known), within `grace`.
    func cancel(grace: Duration) {
        settle(.failure(CancellationError()), unlessConnected: true)
        for task in state.withLock({ $0.tasks }) { task.cancel() }
        guard isConnected else { return }
        Task {
            try? await Task.sleep(for: grace)
            await self.abandon(CancellationError())
        }
    }

    /// Ends a call still unsettled with `error` and closes its connection, so a query the
    /// database never answers neither holds the caller nor keeps the connection.
    func abandon(_ error: any Error) async {
        let connection = state.withLock { s in s.settled ? nil : s.connection }
        guard let connection else { return }
        settle(.failure(error))
        try? await connection.close()
    }

    func giveUpUnlessConnected(_ error: any Error) {
        guard !isConnected else { return }
        settle(.failure(error), unlessConnected: true)
    }

    func settle(_ result: Result<R, any Error>, unlessConnected: Bool = false) {
        let (continuation, tasks): (CheckedContinuation<R, any Error>?, [Task<Void, Never>]) = state.withLock { s in
            guard !s.settled, !(unlessConnected && s.connection != nil) else { return (nil, []) }
            s.settled = true
            s.result = result
            defer { (s.continuation, s.tasks) = (nil, []) }
            return (s.continuation, s.tasks)
        }
        continuation?.resume(with: result)
        for task in tasks { task.cancel() }
    }
}
