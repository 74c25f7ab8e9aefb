import Synchronization

/// The request that created each recent event, so the outbox's lines about its deliveries name
/// that request beside the event (one push followed from its request to its outcome in the log).
/// Filled only while `debug` lines are written; in memory, for this process's last `capacity`
/// events: a delivery sent by another instance, or after a restart, is named by its event alone.
public final class EventOrigins: Sendable {
    private struct State {
        var requests: [String: String] = [:]
        /// Events in the order they were recorded; the oldest goes first when full.
        var order: [String] = []
        var next = 0
    }

    private let capacity: Int
    private let state = Mutex(State())

    public init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
    }

    /// Remembers that `requestID` created `eventID`.
    public func record(event eventID: String, request requestID: String) {
        state.withLock { s in
            if s.order.count < capacity {
                s.order.append(eventID)
            } else {
                s.requests[s.order[s.next]] = nil
                s.order[s.next] = eventID
                s.next = (s.next + 1) % capacity
            }
            s.requests[eventID] = requestID
        }
    }

    /// The request that created `eventID`, when this process still remembers it.
    public func request(of eventID: String) -> String? {
        state.withLock { $0.requests[eventID] }
    }
}
