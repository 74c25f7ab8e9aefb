import Synchronization

/// Group commit: callers that arrive while a commit is running wait, and the next commit takes
/// them all at once. An idle store commits a caller at once (no added latency); a busy one pays
/// one WAL sync for many callers instead of one each.
///
/// A busy store also lets the callers already on their way join: before each commit while the
/// last one had company, the committing task yields to the tasks scheduled ahead of it, again
/// while that brought more callers (at most `gatheringRounds` times). A notify's handler that is
/// one step from its commit then rides this sync instead of paying the next one itself.
final class GroupCommit<Item: Sendable, Output: Sendable>: Sendable {
    private struct Waiter {
        var item: Item
        var continuation: CheckedContinuation<Output, any Error>
    }
    private struct State {
        var waiting: [Waiter] = []
        var running = false
        /// The last commit had company: callers waited behind it or joined it.
        var busy = false
    }
    private let state = Mutex(State())
    /// Commits a group; one result per item, in order.
    private let commit: @Sendable ([Item]) async -> [Result<Output, any Error>]
    /// Yields before a busy commit, at most: each lets the tasks scheduled meanwhile run.
    static var gatheringRounds: Int { 4 }

    init(commit: @escaping @Sendable ([Item]) async -> [Result<Output, any Error>]) {
        self.commit = commit
    }

    func submit(_ item: Item) async throws -> Output {
        // Nobody committing: commit this caller in its own task (no task to start and wake); whoever
        // arrives meanwhile is committed together afterwards.
        // Nil: a commit is running; else whether the last one had company.
        let busy = state.withLock { s -> Bool? in
            guard !s.running else { return nil }
            s.running = true
            return s.busy
        }
        if let busy {
            var joined: [Waiter] = []
            if busy {
                await gather()
                joined = state.withLock { s in
                    defer { s.waiting = [] }
                    return s.waiting
                }
            }
            let results = await commit([item] + joined.map(\.item))
            for (waiter, result) in zip(joined, results.dropFirst()) { waiter.continuation.resume(with: result) }
            let more = state.withLock { s -> Bool in
                s.busy = !joined.isEmpty || !s.waiting.isEmpty
                if s.waiting.isEmpty { s.running = false }
                return s.running
            }
            if more { Task { await self.drain() } }
            return try results[0].get()
        }
        return try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { s -> Bool in
                s.waiting.append(Waiter(item: item, continuation: continuation))
                guard !s.running else { return false }
                s.running = true
                return true
            }
            if start { Task { await self.drain() } }
        }
    }

    /// Commits groups until nobody is waiting.
    private func drain() async {
        while true {
            await gather()
            let group = state.withLock { s -> [Waiter] in
                let group = s.waiting
                s.waiting = []
                if group.isEmpty { s.running = false } else { s.busy = true }
                return group
            }
            guard !group.isEmpty else { return }
            let results = await commit(group.map(\.item))
            for (waiter, result) in zip(group, results) { waiter.continuation.resume(with: result) }
        }
    }

    /// Lets the tasks scheduled ahead of the committing one run, while that brings more callers.
    private func gather() async {
        var waiting = state.withLock { $0.waiting.count }
        for _ in 0..<Self.gatheringRounds {
            await Task.yield()
            let now = state.withLock { $0.waiting.count }
            if now == waiting { return }
            waiting = now
        }
    }
}
