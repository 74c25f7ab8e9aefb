public import Foundation

/// A read marker a device posted (SPEC §15), once its proof holds: the conversation read up to a
/// position, and the sibling devices whose notifications of it go away.
public struct ReadMarker: Sendable {
    public var app: String
    /// What makes the marker unique (the SHA-256 of the message it proves, hex): one seen
    /// before is a replay.
    public var digest: String
    public var conversation: String
    public var upTo: String
    /// When the device made it (unix seconds): an older marker never replaces a newer one.
    public var issuedAt: Int64
    /// The devices told (`DeviceRecord.rowID`s), never the caller.
    public var siblings: [Int64]

    public init(app: String, digest: String, conversation: String, upTo: String, issuedAt: Int64, siblings: [Int64]) {
        self.app = app
        self.digest = digest
        self.conversation = conversation
        self.upTo = upTo
        self.issuedAt = issuedAt
        self.siblings = siblings
    }
}

/// One device's dismissal of one conversation: the latest position read, and which merge of
/// markers it is (`generation`, with `markedAt`, names it, so it is pushed once).
public struct PendingDismissal: Hashable, Sendable {
    public var deviceRowID: Int64
    public var app: String
    public var conversation: String
    public var upTo: String
    public var generation: Int64
    public var markedAt: Date

    public init(deviceRowID: Int64, app: String, conversation: String, upTo: String, generation: Int64, markedAt: Date) {
        self.deviceRowID = deviceRowID
        self.app = app
        self.conversation = conversation
        self.upTo = upTo
        self.generation = generation
        self.markedAt = markedAt
    }
}

/// Where read markers become dismissals: one row per device and conversation, armed when a marker
/// arrives and sent at most once per window (markers within it merge into the next push).
public protocol DismissalLedger: Sendable {
    /// Records `marker` and arms each sibling's dismissal of its conversation: due now when the
    /// last one went out `window` ago or more, else when the window ends; a marker merges into an
    /// armed dismissal (its position replaces the older one's). One transaction.
    /// - Returns: false for a replay (the digest was seen before): nothing changes.
    func record(_ marker: ReadMarker, window: TimeInterval, now: Date) async throws -> Bool
    /// Armed dismissals due at `now`, the earliest due first.
    func dueDismissals(now: Date, limit: Int) async throws -> [PendingDismissal]
    /// When the next armed dismissal is due; nil when none is armed.
    func nextDismissalDue() async throws -> Date?
    /// Records that `sent` went out at `now`; one merged since it was read stays armed, due when the window ends.
    func dismissalsSent(_ sent: [PendingDismissal], window: TimeInterval, now: Date) async throws
    /// Each device's dismissals marked at or after `since`, newest first, at most `limit` each:
    /// what rides along in its next sealed alert.
    func recentDismissals(deviceRowIDs: [Int64], since: Date, limit: Int) async throws -> [Int64: [PendingDismissal]]
}

/// How long a marker's digest is kept: its `issued_at` is accepted 10 minutes either side of now.
public let readMarkerMemory: TimeInterval = 20 * 60
