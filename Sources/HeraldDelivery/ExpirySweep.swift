import HeraldCore
import HeraldStore
import Logging
public import ServiceLifecycle

/// Marks unclaimed deliveries past their expiration. Claimed ones past it are dropped at send
/// time, so this only keeps them from lingering and need not run before every claim.
public struct ExpirySweep: Service, Sendable {
    let queue: any DeliveryQueue
    let interval: Duration
    let clock: any HeraldClock
    let logger: Logger

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    if try await queue.expire(now: clock.now()) > 0 { logger.debug("expired deliveries dropped") }
                } catch {
                    if Task.isCancelled { return }
                    logger.error("outbox store error", metadata: ["error": "\(error)"])
                }
                try? await clock.sleep(for: interval)
            }
        }
    }
}
