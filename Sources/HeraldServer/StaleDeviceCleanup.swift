import Foundation
import HeraldStore
import Logging

/// Removes devices not seen for `staleAfterDays` (SPEC §4.2: GhostTalk's periodic cleanup), once
/// (`herald cleanup`, and `herald serve` before it listens) or every `interval` (`herald serve`).
public struct StaleDeviceCleanup: Sendable {
    public let store: any Store
    public let staleAfterDays: Int
    public let interval: Duration
    public let logger: Logger

    public init(store: any Store, staleAfterDays: Int, interval: Duration = .seconds(86_400), logger: Logger = Logger(label: "herald.cleanup")) {
        self.store = store
        self.staleAfterDays = staleAfterDays
        self.interval = interval
        self.logger = logger
    }

    /// One pass; returns how many devices were removed.
    public func once(now: Date = Date()) async throws -> Int {
        try await store.deleteStaleDevices(lastSeenBefore: now.addingTimeInterval(-Double(staleAfterDays) * 86_400))
    }

    /// A pass every `interval` until cancelled.
    public func run() async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: interval)
                let removed = try await once()
                logger.info("stale devices removed", metadata: ["removed": "\(removed)", "stale_after_days": "\(staleAfterDays)"])
            } catch is CancellationError {
                return
            } catch {
                logger.error("stale device cleanup failed", metadata: ["error": "\(error)"])
            }
        }
    }
}
