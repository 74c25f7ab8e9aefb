import Synchronization

/// Group commit: callers that arrive while a commit is running wait, and the next commit takes
/// them all at once. An idle store commits a caller at once (no added latency); a busy one pays
/// one WAL sync for many callers instead of one each.
final class GroupCommit<Item: Sendable, Output: Sendable>: Sendable {
    private struct Waiter {
        var item: Item
        var continuation: CheckedContinuation<Output, any Error>
    }
    private struct State {
        var waiting: [Waiter] = []
        var running = false
    }
    private let state = Mutex(State())
    /// Commits a group; one result per item, in order.
    private let commit: @Sendable ([Item]) async -> [Result<Output, any Error>]

    init(commit: @escaping @Sendable ([Item]) async -> [Result<Output, any Error>]) {
        self.commit = commit
    }

    func submit(_ item: Item) async throws -> Output {
        // Nobody committing: commit this caller at once, in its own task (no task to start and
        // wake); whoever arrived meanwhile is committed together afterwards.
        let alone = state.withLock { s -> Bool in
            guard !s.running else { return false }
            s.running = true
            return true
        }
        if alone {
            let result = await commit([item])[0]
            let more = state.withLock { s -> Bool in
                if s.waiting.isEmpty { s.running = false }
                return s.running
            }
            if more { Task { await self.drain() } }
            return try result.get()
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
            let group = state.withLock { s -> [Waiter] in
                let group = s.waiting
                s.waiting = []
                if group.isEmpty { s.running = false }
                return group
            }
            guard !group.isEmpty else { return }
            let results = await commit(group.map(\.item))
            for (waiter, result) in zip(group, results) { waiter.continuation.resume(with: result) }
        }
    }
}
