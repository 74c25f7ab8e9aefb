public import HeraldPushCore

public protocol Store: DeviceRegistry, DeliveryQueue, ChainCheckpoints, Leadership, StoreStatistics, CredentialLedger, Retention, DismissalLedger, FanoutQueue {
    /// Brings the schema to the current version.
    func migrate() async throws
}

/// The database did not answer in time: the call did not get a connection, so nothing it would
/// have written is promised (the API answers 503 with `Retry-After`; a publisher retrying with the
/// same dedupe key gets one event either way).
public struct StoreUnavailable: Error, CustomStringConvertible, Sendable {
    /// Where the database is (never its password).
    public let address: String
    public let cause: String

    public init(address: String, cause: String) {
        (self.address, self.cause) = (address, cause)
    }

    public var description: String { "the database at \(address) is not answering: \(cause)" }
}
