import Synchronization

/// New devices an app is admitting right now, counted in this process: the device limit is read
/// as the store's count plus these, so concurrent registrations (or Matrix notifies naming new
/// pushkeys) cannot pass `maximumDevices` by as many as are in flight. One per app, shared by
/// every copy of its `AppSettings` and every route. Instances sharing a PostgreSQL database each
/// count their own: together they may pass the limit by at most what the others have in flight.
public final class DeviceAdmissions: Sendable {
    private let inFlight = Mutex(0)

    public init() {}

    /// Reserves `count` admissions; returns how many were in flight before them.
    func reserve(_ count: Int) -> Int {
        inFlight.withLock { inFlight in
            defer { inFlight += count }
            return inFlight
        }
    }

    /// Ends `count` reservations (the devices were written, or refused).
    func release(_ count: Int) {
        inFlight.withLock { $0 = max(0, $0 - count) }
    }
}
