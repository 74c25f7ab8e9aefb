import Foundation
import Synchronization

/// A clock tests move by hand.
public final class TestClock: Sendable {
    public init() {}
    private let offset = Mutex<TimeInterval>(0)
    public func advance(by seconds: TimeInterval) { offset.withLock { $0 += seconds } }
    public var now: @Sendable () -> Date { { [self] in Date().addingTimeInterval(offset.withLock { $0 }) } }
}

