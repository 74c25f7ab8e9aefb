import Crypto
public import Foundation
public import HeraldCore
import HeraldPushCore
import KasiaProtocol
public import HeraldStore
public import Logging
public import ServiceLifecycle

/// Sends the dismissals read markers armed (`ReadMarkers`), as they fall due: each becomes an
/// event of the `dismiss` template for its device, committed with a dedupe key that names the
/// dismissal's merge (`PendingDismissal.generation` and `markedAt`), then marked sent. A crash
/// between the two commits the same event again, which the store skips: each dismissal is pushed
/// once, and instances sharing a database do not push it twice either.
public final class DismissalDispatcher: Service, Sendable {
    let ledger: any DismissalLedger
    let publisher: EventPublisher
    /// At most one dismissal per device and conversation per this many seconds.
    let window: TimeInterval
    let clock: any HeraldClock
    let logger: Logger
    private let wakeup = Wakeup()
    /// Dismissals one commit takes at most.
    static let batch = 500
    /// How often the ledger is looked at with nothing due here: markers another instance recorded.
    static let poll: Duration = .seconds(1)

    public init(ledger: any DismissalLedger, publisher: EventPublisher, window: TimeInterval, clock: any HeraldClock, logger: Logger) {
        self.ledger = ledger
        self.publisher = publisher
        self.window = window
        self.clock = clock
        self.logger = logger
    }

    /// A marker armed dismissals: look now.
    public func markerRecorded() { wakeup.signal() }

    /// Commits every dismissal due now as a push; returns how many.
    @discardableResult
    public func dispatchDue() async throws -> Int {
        var total = 0
        while true {
            let now = clock.now()
            let due = try await ledger.dueDismissals(now: now, limit: Self.batch)
            guard !due.isEmpty else { return total }
            let events = due.map { event(for: $0, now: now) }
            _ = try await publisher.commit(events, checkpoint: nil, now: now)
            try await ledger.dismissalsSent(due, window: window, now: now)
            total += due.count
            if due.count < Self.batch { return total }
        }
    }

    /// The event `dismissal` becomes: a `dismiss` push to its device, under a dedupe key that
    /// names this merge of markers (the same dismissal committed twice is one event).
    public func event(for dismissal: PendingDismissal, now: Date) -> NewEvent {
        let push = DismissEventTemplate.push(
            conversation: dismissal.conversation, upTo: dismissal.upTo, signingKey: publisher.apps[dismissal.app]?.sealing?.signingKey)
        let name = "\(dismissal.app)\u{0}\(dismissal.deviceRowID)\u{0}\(dismissal.conversation)\u{0}\(dismissal.generation)\u{0}\(dismissal.markedAt.milliseconds)"
        return NewEvent(
            id: UUID.timeOrdered(at: now).lowercasedString, app: dismissal.app, template: "dismiss", push: push,
            expiresAt: now.addingTimeInterval(EventPublisher.defaultLifetime), deviceRowIDs: [dismissal.deviceRowID],
            dedupeKey: "dismiss:" + Hex.encode(SHA256.hash(data: Array(name.utf8))))
    }

    /// Sends what is due, then sleeps until the next one is due (at most `poll`) or a marker arrives.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                var wait = Self.poll
                do {
                    try await self.dispatchDue()
                    if let next = try await self.ledger.nextDismissalDue() {
                        let seconds = next.timeIntervalSince(self.clock.now())
                        wait = min(wait, .milliseconds(Int64(max(1, min(seconds, 1) * 1_000))))
                    }
                } catch is CancellationError {
                    return
                } catch {
                    self.logger.warning("dismissals could not be sent now; trying again", metadata: ["error": "\(error)"])
                }
                await self.wakeup.wait(timeout: wait, clock: self.clock)
            }
        }
    }
}
