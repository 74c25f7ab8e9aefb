import Foundation
import Hummingbird

/// SPEC §3's error: `{"error": {"code": …, "message": …, "field": …}}` with the right status.
public struct APIError: HTTPResponseError, Hashable {
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

    public static func invalid(_ field: String, _ message: String) -> APIError {
        APIError(.badRequest, code: "invalid_field", message: message, field: field)
    }

    public static func missing(_ field: String) -> APIError {
        APIError(.badRequest, code: "missing_field", message: "\(field) is required", field: field)
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var error: [String: Any] = ["code": code, "message": message]
        if let field { error["field"] = field }
        let data = try JSONSerialization.data(withJSONObject: ["error": error], options: [.sortedKeys])
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Reading JSON bodies with errors that name the field.
enum JSONBody {
    /// Decodes `T` from a body of at most `limit` bytes.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, limit: Int) async throws -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch {
            throw APIError(.contentTooLarge, code: "body_too_large", message: "the body is limited to \(limit) bytes")
        }
        if let type = request.headers[.contentType], !type.lowercased().hasPrefix("application/json") {
            throw APIError(.unsupportedMediaType, code: "unsupported_media_type", message: "send application/json")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw Self.apiError(error)
        }
    }

    static func apiError(_ error: DecodingError) -> APIError {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.reduce("") { partial, key in
                if let index = key.intValue { return partial + "[\(index)]" }
                return partial.isEmpty ? key.stringValue : partial + "." + key.stringValue
            }
        }
        switch error {
        case .typeMismatch(_, let context) where context.codingPath.isEmpty:
            return APIError(.badRequest, code: "invalid_json", message: "the body must be a JSON object", field: "body")
        case .typeMismatch(let type, let context):
            return .invalid(path(context.codingPath), "\(path(context.codingPath)) must be \(Self.name(type))")
        case .valueNotFound(let type, let context):
            return .invalid(path(context.codingPath), "\(path(context.codingPath)) must be \(Self.name(type)), not null")
        case .keyNotFound(let key, let context):
            return .missing(path(context.codingPath + [key]))
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            return APIError(.badRequest, code: "invalid_json", message: "the body is not valid JSON", field: "body")
        case .dataCorrupted(let context):
            return .invalid(path(context.codingPath), context.debugDescription)
        @unknown default:
            return APIError(.badRequest, code: "invalid_json", message: "the body could not be read", field: "body")
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
