import HeraldPushCore

/// FCM's error answer: the `google.rpc.Status` envelope, with the FCM code from its
/// `google.firebase.fcm.v1.FcmError` detail when there is one.
public struct FCMErrorAnswer: Sendable, Hashable {
    public var httpStatus: Int
    /// The canonical status (`NOT_FOUND`, `UNAUTHENTICATED`, …).
    public var status: String?
    /// The FcmError detail's `errorCode` (`UNREGISTERED`, `QUOTA_EXCEEDED`, …).
    public var errorCode: String?
    public var message: String?
    /// Fields a `google.rpc.BadRequest` detail names (`message.token`).
    public var fieldViolations: [String]
    /// `Retry-After`, when the answer had one (clamped to an hour).
    public var retryAfter: Duration?

    public init(
        httpStatus: Int, status: String? = nil, errorCode: String? = nil, message: String? = nil, fieldViolations: [String] = [],
        retryAfter: Duration? = nil
    ) {
        self.httpStatus = httpStatus
        self.status = status
        self.errorCode = errorCode
        self.message = message
        self.fieldViolations = fieldViolations
        self.retryAfter = retryAfter
    }

    /// Reads an error answer. A body that is not Google's JSON (a proxy's HTML 502) keeps only the
    /// HTTP status; `retryAfter` is the header's delay in seconds, range-checked.
    public init(httpStatus: Int, body: [UInt8], retryAfterHeader: String?) {
        // {"error": {"status", "message", "details": [{"@type", "errorCode", "fieldViolations": [{"field"}]}]}}
        let error = (try? JSONValue(parsing: body))?[path: ["error"]]
        let details = error?[path: ["details"]]?.arrayItems ?? []
        let fcmError = details.first { $0[path: ["@type"]]?.stringValue?.hasSuffix("google.firebase.fcm.v1.FcmError") == true }
        self.init(
            httpStatus: httpStatus, status: error?[path: ["status"]]?.stringValue, errorCode: fcmError?[path: ["errorCode"]]?.stringValue,
            message: error?[path: ["message"]]?.stringValue,
            fieldViolations: details.flatMap { ($0[path: ["fieldViolations"]]?.arrayItems ?? []).compactMap { $0[path: ["field"]]?.stringValue } },
            retryAfter: RetryAfter.delay(retryAfterHeader))
    }

    /// The code logs and metrics carry: the FCM code, else the canonical status, else the HTTP status.
    public var reason: String { errorCode ?? status ?? "HTTP \(httpStatus)" }
}

/// What happened to one FCM message.
public enum FCMResult: Sendable, Hashable {
    /// 200: FCM took it; `name` is its message id.
    case accepted(name: String)
    /// FCM answered with an error.
    case rejected(FCMErrorAnswer)
    /// No HTTP answer (timeout, reset, no connection).
    case transportFailure(String)

    /// A 200's answer, `{"name": "projects/…/messages/…"}`; a name missing or not a string reads as "".
    public static func accepted(answer body: [UInt8]) -> FCMResult {
        .accepted(name: (try? JSONValue(parsing: body))?[path: ["name"]]?.stringValue ?? "")
    }
}

/// What the sender should do with an FCM result.
public enum FCMAction: Sendable, Hashable {
    case done
    /// UNREGISTERED, or a 400 naming `message.token`: the token is dead.
    case tokenDead
    /// SENDER_ID_MISMATCH: dead for this token, or the app's credentials are wrong for every
    /// token. Only the sender can tell which, from what its other sends did.
    case senderMismatch
    /// A 401 without an FCM code: the access token was refused; refresh it once.
    case refreshAccessToken
    /// The project's credentials are refused (403 without an FCM code, THIRD_PARTY_AUTH_ERROR):
    /// pause the app, keep the tokens.
    case credentialsRefused
    /// Back off: the device, the project (at least 60 s) or the service.
    case retry(after: Duration?, scope: RetryScope)
    /// The message is wrong and stays wrong.
    case fail(reason: String)

    public enum RetryScope: Sendable, Hashable {
        case device, project, service
    }
}

extension FCMResult {
    /// The least back-off after a project's QUOTA_EXCEEDED (Google asks for one minute).
    public static let minimumQuotaBackoff: Duration = .seconds(60)

    /// Classifies on the FCM code first, then on the HTTP status.
    /// FCM refused the access token itself (401, or 403 without an FCM code): worth one fresh token.
    public var refusesAccessToken: Bool {
        guard case .rejected(let answer) = self, answer.errorCode == nil else { return false }
        return answer.httpStatus == 401 || answer.httpStatus == 403
    }

    public var action: FCMAction {
        switch self {
        case .accepted: return .done
        case .transportFailure: return .retry(after: nil, scope: .service)
        case .rejected(let answer):
            switch (answer.errorCode, answer.httpStatus) {
            case ("UNREGISTERED", _): return .tokenDead
            case ("SENDER_ID_MISMATCH", _): return .senderMismatch
            case ("THIRD_PARTY_AUTH_ERROR", _): return .credentialsRefused
            case ("QUOTA_EXCEEDED", _), (nil, 429):
                // "Device message rate exceeded" throttles one device; anything else the project.
                if answer.message?.lowercased().contains("device") == true { return .retry(after: answer.retryAfter, scope: .device) }
                return .retry(after: max(answer.retryAfter ?? .zero, Self.minimumQuotaBackoff), scope: .project)
            case ("UNAVAILABLE", _), ("INTERNAL", _), ("UNSPECIFIED_ERROR", _), (nil, 500...599):
                return .retry(after: answer.retryAfter, scope: .service)
            case (_, 400) where answer.fieldViolations.contains("message.token"):
                return .tokenDead
            case ("INVALID_ARGUMENT", _) where answer.message?.contains("not a valid FCM registration token") == true:
                return .tokenDead
            case (nil, 401): return .refreshAccessToken
            case (nil, 403): return .credentialsRefused
            case (nil, 404): return .fail(reason: "the project or the API is not found (\(answer.message ?? "404"))")
            default: return .fail(reason: answer.reason + (answer.message.map { ": " + $0 } ?? ""))
            }
        }
    }
}
