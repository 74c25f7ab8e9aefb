import Foundation
import HeraldCore
public import HeraldPushCore

/// A request the domain refuses: what kind of refusal, a stable code, a sentence, and the field
/// at fault. The transport chooses how to say it (HeraldServer: an HTTP status and
/// `{"error": {"code": …, "message": …, "field": …}}`).
public struct Refusal: Error, Hashable, Sendable {
    /// What the refusal is, whatever carries it.
    public enum Kind: Hashable, Sendable {
        /// The request does not have the documented form.
        case malformed
        /// It has the form and is refused on what it means (a limit across fields, a time
        /// window, a push service's rules).
        case unprocessable
        /// No credentials, or credentials that prove nothing.
        case unauthenticated
        /// Credentials that do not allow this.
        case forbidden
        case notFound
        /// Valid, and at odds with what is stored (a registration that would undo another's).
        case conflict
        /// More than a limit on size or count allows.
        case tooLarge
        case rateLimited
        case unavailable
    }

    public var kind: Kind
    /// A stable machine-readable code: `invalid_json`, `invalid_field`, `missing_field`, …
    public var code: String
    public var message: String
    /// The field at fault, as a path into the body (`watched_addresses[2]`).
    public var field: String?
    /// Seconds, for `rateLimited` and `unavailable`.
    public var retryAfter: Int?

    public init(_ kind: Kind, code: String, message: String, field: String? = nil, retryAfter: Int? = nil) {
        self.kind = kind
        self.code = code
        self.message = message
        self.field = field
        self.retryAfter = retryAfter
    }

    /// `invalid_field`: the field does not have the documented form.
    public static func invalid(_ field: String, _ message: String) -> Refusal {
        Refusal(.malformed, code: "invalid_field", message: message, field: field)
    }

    /// `invalid_value`: the field has the form the API document gives it and is refused on
    /// what it means (a limit in UTF-8 bytes or across fields, a time window, a push service's
    /// rules).
    public static func unprocessable(_ field: String, _ message: String) -> Refusal {
        Refusal(.unprocessable, code: "invalid_value", message: message, field: field)
    }

    public static func missing(_ field: String) -> Refusal {
        Refusal(.malformed, code: "missing_field", message: "\(field) is required", field: field)
    }
}

extension Refusal {
    /// The refusal for a field `JSONObjectReader` refused: `invalid_field` naming it, or
    /// `invalid_json` when the body itself is not an object.
    public init(_ refusal: JSONFieldError) {
        self = refusal.isBody
            ? Refusal(.malformed, code: "invalid_json", message: "the body must be a JSON object", field: "body")
            : .invalid(refusal.field, refusal.message)
    }

    /// The refusal for a body that did not decode, naming the field at its coding path.
    public init(decoding error: DecodingError) {
        self = Self.refusal(error)
    }

    static func refusal(_ error: DecodingError) -> Refusal {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.reduce("") { partial, key in
                if let index = key.intValue { return partial + "[\(index)]" }
                return partial.isEmpty ? key.stringValue : partial + "." + key.stringValue
            }
        }
        switch error {
        case .typeMismatch(_, let context) where context.codingPath.isEmpty:
            return Refusal(.malformed, code: "invalid_json", message: "the body must be a JSON object", field: "body")
        case .typeMismatch(let type, let context):
            return .invalid(path(context.codingPath), "\(path(context.codingPath)) must be \(Self.name(type))")
        case .valueNotFound(let type, let context):
            return .invalid(path(context.codingPath), "\(path(context.codingPath)) must be \(Self.name(type)), not null")
        case .keyNotFound(let key, let context):
            return .missing(path(context.codingPath + [key]))
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return Refusal(.malformed, code: "invalid_json", message: "the body is not valid JSON", field: "body")
        case .dataCorrupted(let context):
            return .invalid(path(context.codingPath), context.debugDescription)
        @unknown default:
            return Refusal(.malformed, code: "invalid_json", message: "the body could not be read", field: "body")
        }
    }

    private static func name(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is [String].Type, is [Any].Type: "an array"
        case is Int.Type, is Int64.Type, is UInt64.Type: "an integer"
        case is Bool.Type: "true or false"
        default: "of the right type"
        }
    }
}

extension Refusal {
    /// `value` when it is 1 to `maximum` characters (Unicode scalars) and none of them is a
    /// control character (a NUL would end the stored text early); else `invalid_field` naming `field`.
    static func printable(_ value: String, field: String, maximum: Int) throws(Refusal) -> String {
        let scalars = value.unicodeScalars
        guard !scalars.isEmpty, scalars.count <= maximum, !scalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .invalid(field, "\(field) is 1 to \(maximum) characters, none of them a control character")
        }
        return value
    }
}
