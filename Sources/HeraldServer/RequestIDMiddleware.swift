import Foundation
import HeraldPushCore
import HTTPTypes
import Hummingbird
import Logging

/// Gives every request an id a caller and an operator can both quote: the caller's
/// `X-Request-ID` when it is 1–128 visible ASCII characters, else a fresh UUID. The id is echoed
/// on the answer (errors included) and is `request_id` in the metadata of every log line written
/// through the request's logger.
struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    static var maximumLength: Int { 128 }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let id = request.headers[.xRequestID].flatMap(Self.acceptable) ?? UUID.random().lowercasedString
        var context = context
        context.logger[metadataKey: "request_id"] = .string(id)
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        response.headers[.xRequestID] = id
        return response
    }

    /// The caller's id when it is safe to echo and to log.
    static func acceptable(_ id: String) -> String? {
        guard (1...maximumLength).contains(id.utf8.count), id.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        return id
    }
}

extension HTTPField.Name {
    /// A request's id, the caller's or Herald's.
    static let xRequestID = HTTPField.Name("X-Request-ID")!
}

extension Logger {
    /// The id `RequestIDMiddleware` gave the request this logger writes for.
    var requestID: String? {
        if case .string(let id)? = self[metadataKey: "request_id"] { return id }
        return nil
    }
}
