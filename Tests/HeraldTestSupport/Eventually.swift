import Foundation

/// A condition `eventually` polled until its deadline without it ever holding.
public struct ConditionNeverHeld: Error, CustomStringConvertible {
    public let description: String
}

/// Polls `condition` until it holds, throwing `ConditionNeverHeld` (with the caller's file and
/// line) when it has not within `seconds`. The deadline is generous on purpose: it bounds a broken
/// run, it is never what a test asserts (a loaded machine is slow, never a failure by itself).
public func eventually(
    seconds: Double = 60, every interval: Duration = .milliseconds(20),
    fileID: String = #fileID, line: Int = #line,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: interval)
    }
    if try await condition() { return }
    throw ConditionNeverHeld(description: "the condition at \(fileID):\(line) did not hold within \(seconds) s")
}
