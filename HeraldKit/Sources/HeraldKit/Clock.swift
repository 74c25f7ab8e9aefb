public import Foundation

/// Where HeraldKit's policies read the time; tests pass a `ManualClock`.
public protocol WallClock: Sendable {
    var now: Date { get }
}

/// The system's clock.
public struct SystemWallClock: WallClock {
    public init() {}
    public var now: Date { Date() }
}

/// A clock that moves only when told to (tests, previews).
public final class ManualClock: WallClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date

    public init(_ start: Date = Date(timeIntervalSince1970: 1_750_000_000)) {
        current = start
    }

    public var now: Date { lock.withLock { current } }

    /// Moves the clock forward.
    public func advance(by seconds: TimeInterval) {
        lock.withLock { current += seconds }
    }
}
