import Foundation
public import HeraldCore
public import HeraldStore
public import Logging
public import ServiceLifecycle

/// Removes devices not seen for `staleAfterDays` (GhostTalk's periodic cleanup), once
/// (`herald cleanup`, and `herald serve` before it listens) or, as a service, every `interval`.
public struct StaleDeviceCleanup: Service, Sendable {
    public let store: any DeviceRegistry
    public let staleAfterDays: Int
    public let interval: Duration
    public let clock: any HeraldClock
    public let logger: Logger

    public init(
        store: any DeviceRegistry, staleAfterDays: Int, interval: Duration = .seconds(86_400), clock: any HeraldClock = SystemClock(),
        logger: Logger = Logger(label: "herald.cleanup")
    ) {
        self.store = store
        self.staleAfterDays = staleAfterDays
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    /// One pass; returns how many devices were removed.
    public func once() async throws -> Int {
        try await store.deleteStaleDevices(lastSeenBefore: clock.now().addingTimeInterval(-Double(staleAfterDays) * 86_400))
    }

    /// A pass every `interval` until a graceful shutdown or cancellation.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await clock.sleep(for: interval)
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
}
