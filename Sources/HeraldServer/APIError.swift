import Foundation
import HeraldCore
public import HeraldPushCore
public import HeraldDelivery
public import HTTPTypes

/// A refused request as HTTP says it: its status, a stable code, a sentence, and the field at
/// fault, written as `{"error": {"code": …, "message": …, "field": …}}`. The domain's
/// ``Refusal``s become one by their kind; the transport's own refusals (405, 415, 500) are made here.
public struct APIError: Error, Hashable, Sendable {
    public var status: HTTPResponse.Status
    /// A stable machine-readable code: `invalid_json`, `invalid_field`, `missing_field`, …
    public var code: String
    public var message: String
    /// The field at fault, as a path into the body (`watched_addresses[2]`).
    public var field: String?
    /// Seconds, for 429 and 503.
    public var retryAfter: Int?

    public init(_ status: HTTPResponse.Status, code: String, message: String, field: String? = nil, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retryAfter = retryAfter
    }

    /// The domain's refusal with the status its kind takes.
    public init(_ refusal: Refusal) {
        self.init(Self.status(of: refusal.kind), code: refusal.code, message: refusal.message, field: refusal.field, retryAfter: refusal.retryAfter)
    }

    /// 400 for a request without the documented form, 422 for one refused on what it means.
    public static func status(of kind: Refusal.Kind) -> HTTPResponse.Status {
        switch kind {
        case .malformed: .badRequest
        case .unprocessable: .unprocessableContent
        case .unauthenticated: .unauthorized
        case .forbidden: .forbidden
        case .notFound: .notFound
        case .conflict: .conflict
        case .tooLarge: .contentTooLarge
        case .rateLimited: .tooManyRequests
        case .unavailable: .serviceUnavailable
        }
    }

    /// 400 `invalid_field`.
    public static func invalid(_ field: String, _ message: String) -> APIError { APIError(Refusal.invalid(field, message)) }

    /// 422 `invalid_value`.
    public static func unprocessable(_ field: String, _ message: String) -> APIError { APIError(Refusal.unprocessable(field, message)) }

    /// 400 `missing_field`.
    public static func missing(_ field: String) -> APIError { APIError(Refusal.missing(field)) }

    /// The refusal for a field `JSONObjectReader` refused.
    public init(_ refusal: JSONFieldError) { self.init(Refusal(refusal)) }

    /// The refusal for a body that did not decode, naming the field at its coding path.
    public init(decoding error: DecodingError) { self.init(Refusal(decoding: error)) }
}
