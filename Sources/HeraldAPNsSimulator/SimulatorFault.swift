import Foundation
import HeraldAPNs

/// A fault to inject, as `POST /faults` takes it (JSON, snake_case keys).
///
/// - `respond`: answer `status`/`reason` (with `timestamp_ms` and `retry_after` when given).
/// - `unregistered`: 410 Unregistered with `timestamp_ms` (default: now).
/// - `bad_token`: 400 BadDeviceToken.
/// - `delay`: hold each matching answer `delay_ms`.
/// - `goaway`: send GOAWAY on a connection once it has carried `after_streams` streams.
/// - `reset`: reset (TCP RST) a connection once it has carried `after_streams` streams.
/// - `stall`: stop reading a connection once it has carried `after_streams` streams: a
///   half-dead connection that answers nothing, PINGs included.
///
/// A fault matches every request, or only those to `token`; with `every` = k only each
/// k-th matching request; it applies `count` times (default: unlimited for token faults
/// and delays, 1 for goaway/reset/stall, unlimited otherwise) and for `duration_ms` if given.
public struct SimulatorFault: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable {
        case respond, unregistered, badToken = "bad_token", delay, goaway, reset, stall
    }
    public var kind: Kind
    public var token: String?
    public var status: Int?
    public var reason: String?
    public var timestampMs: Int64?
    public var retryAfter: Int?
    public var delayMs: Int?
    public var afterStreams: Int?
    public var every: Int?
    public var count: Int?
    public var durationMs: Int?

    public init(
        kind: Kind, token: String? = nil, status: Int? = nil, reason: String? = nil, timestampMs: Int64? = nil,
        retryAfter: Int? = nil, delayMs: Int? = nil, afterStreams: Int? = nil, every: Int? = nil,
        count: Int? = nil, durationMs: Int? = nil
    ) {
        self.kind = kind
        self.token = token
        self.status = status
        self.reason = reason
        self.timestampMs = timestampMs
        self.retryAfter = retryAfter
        self.delayMs = delayMs
        self.afterStreams = afterStreams
        self.every = every
        self.count = count
        self.durationMs = durationMs
    }

    enum CodingKeys: String, CodingKey {
        case kind, token, status, reason, every, count
        case timestampMs = "timestamp_ms", retryAfter = "retry_after", delayMs = "delay_ms"
        case afterStreams = "after_streams", durationMs = "duration_ms"
    }

    /// Checks the fault makes sense; the control port answers 400 with the message otherwise.
    public func validated() throws -> SimulatorFault {
        var fault = self
        if let token { fault.token = token.lowercased() }
        switch kind {
        case .respond:
            guard let status, (400...599).contains(status) else { throw FaultError("respond needs a status 400-599") }
            if reason == nil { fault.reason = Self.defaultReason(status: status) }
        case .unregistered, .badToken:
            break
        case .delay:
            guard let delayMs, delayMs >= 0 else { throw FaultError("delay needs delay_ms >= 0") }
        case .goaway, .reset, .stall:
            guard let afterStreams, afterStreams >= 1 else { throw FaultError("\(kind.rawValue) needs after_streams >= 1") }
            if count == nil { fault.count = 1 }
        }
        if let every, every < 1 { throw FaultError("every must be >= 1") }
        if let count, count < 1 { throw FaultError("count must be >= 1") }
        return fault
    }

    static func defaultReason(status: Int) -> String {
        switch status {
        case 410: "Unregistered"
        case 413: "PayloadTooLarge"
        case 429: "TooManyRequests"
        case 500: "InternalServerError"
        case 503: "ServiceUnavailable"
        case 403: "InvalidProviderToken"
        default: "BadRequest"
        }
    }
}

struct FaultError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension SimulatorFault.Kind {
    /// Faults that act on a whole connection after some streams, not on one answer.
    var isConnectionFault: Bool { self == .goaway || self == .reset || self == .stall }
}
