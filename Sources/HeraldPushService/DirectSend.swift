/// One push as `herald send`'s options give it, for a service to build its own request from.
public struct DirectPush: Sendable {
    public var token: String
    /// `--token-kind`: `token`, or `fid` for a Firebase Installation ID.
    public var tokenKind: String
    public var title: String?
    public var body: String?
    /// `--payload-json`: the whole payload, in the service's own form.
    public var payloadJSON: String?
    /// `--push-type`: alert, background or voip.
    public var pushType: String
    /// `--priority`: 10, 5 or 1; nil for the push type's default.
    public var priority: Int?
    public var collapseID: String?
    /// `--environment`: sandbox or production; nil for the settings' own.
    public var environment: String?
    /// `--connections`: connections to the service.
    public var connections: Int

    public init(
        token: String, tokenKind: String, title: String?, body: String?, payloadJSON: String?, pushType: String, priority: Int?,
        collapseID: String?, environment: String?, connections: Int
    ) {
        self.token = token
        self.tokenKind = tokenKind
        self.title = title
        self.body = body
        self.payloadJSON = payloadJSON
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.environment = environment
        self.connections = connections
    }
}

/// A push `herald send` cannot send as given: the option or field at fault, and the service's
/// reason when it has one (APNs's `BadDeviceToken`).
public struct DirectPushRefusal: Error, Sendable {
    public var field: String
    public var message: String
    public var reason: String?

    public init(field: String, message: String, reason: String? = nil) {
        self.field = field
        self.message = message
        self.reason = reason
    }
}

/// Sends one built push, as often as asked (`--repeat`), on its own connections.
public protocol DirectSender: Sendable {
    /// Sends the push once more (each with its own id where the service has one).
    func send() async -> DirectSendResult
    /// Closes its connections.
    func shutdown() async
}

/// One push's result, whichever the service, and what `herald send` prints of it.
public struct DirectSendResult: Sendable {
    public enum Outcome: Sendable, Equatable {
        case accepted
        case rejected(reason: String)
        case failed(String)
    }

    /// A value of the printed line.
    public enum Value: Sendable, Equatable {
        case string(String)
        case int(Int)
        case null
    }

    public var outcome: Outcome
    /// The line printed for a single push (`status` and the service's own fields).
    public var report: [String: Value]

    public init(outcome: Outcome, report: [String: Value]) {
        self.outcome = outcome
        self.report = report
    }
}
