import Foundation
import HeraldDelivery
import HeraldStore
import HTTPTypes
import Hummingbird
import Logging
import Synchronization

/// Every answer that is not a success is in Herald's envelope, `{"error": {"code", "message",
/// "field"?}}`: a route's own refusals already are; this puts the router's there too. A path
/// Herald serves, asked with another method, is 405 with `Allow`; a path it does not serve is
/// 404; a database that does not answer is 503 `store_unavailable` with `Retry-After`; an error
/// nobody expected is 500, logged with the request's id, its text never sent.
struct ErrorEnvelopeMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: ServedRoutes

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let refusal as Refusal {
            throw APIError(refusal)
        } catch let error as HTTPError where error.status == .notFound {
            // Hummingbird's router found no route (a route's own 404 is an `APIError`).
            let method = request.method.rawValue
            let allowed = routes.methods(for: request.uri.path)
            guard !allowed.isEmpty else {
                let path = request.uri.path
                // The operator's endpoints answer on the admin listener only: say where, not just no.
                if path == "/metrics" || path == "/v1/stats" || path.hasPrefix("/simulators/") {
                    throw APIError(
                        .notFound, code: "not_found",
                        message: "\(path) answers on the admin listener (HERALD_ADMIN_HOST:HERALD_ADMIN_PORT, 127.0.0.1:8081 by default), not on the API's port")
                }
                throw APIError(.notFound, code: "not_found", message: "Herald serves no \(path)")
            }
            var response = try APIError(
                .methodNotAllowed, code: "method_not_allowed",
                message: "\(request.uri.path) takes \(allowed.joined(separator: ", ")), not \(method)"
            ).response(from: request, context: context)
            response.headers[.allow] = allowed.joined(separator: ", ")
            return response
        } catch let error as StoreUnavailable {
            // The database is away: a clear, retryable answer rather than a hung request or a 500.
            context.logger.warning("store unavailable", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            throw APIError(
                .serviceUnavailable, code: "store_unavailable", message: "Herald's database is not answering; try again shortly", retryAfter: 5)
        } catch let error as HTTPError {
            throw APIError(error.status, code: Self.code(error.status), message: error.body ?? error.status.reasonPhrase)
        } catch {
            context.logger.error("unexpected error answering a request", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            throw APIError(.internalServerError, code: "internal_error", message: "Herald could not answer this request; the log names it by its request id")
        }
    }

    /// `Payload Too Large` → `payload_too_large`.
    static func code(_ status: HTTPResponse.Status) -> String {
        status.reasonPhrase.lowercased().map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
    }
}

/// The routes the gateway serves, by path template, for the router's 404s: filled once every
/// route is added (middleware is added before the routes it wraps).
final class ServedRoutes: Sendable {
    private let templates = Mutex<[(segments: [Substring], methods: Set<String>)]>([])

    /// Takes the router's routes (`/apps/{app}/…`, `/v1/events:batch`).
    func fill(_ routes: [(method: String, path: String)]) {
        var byPath: [String: Set<String>] = [:]
        for route in routes { byPath[route.path, default: []].insert(route.method) }
        templates.withLock { templates in
            templates = byPath.map { (Self.segments($0.key), $0.value) }
        }
    }

    /// The methods a path is served with, sorted; empty when no route matches it.
    func methods(for path: String) -> [String] {
        let requested = Self.segments(path)
        let methods = templates.withLock { templates in
            templates.filter { template in
                template.segments.count == requested.count
                    && zip(template.segments, requested).allSatisfy { pattern, segment in
                        (pattern.hasPrefix("{") && pattern.hasSuffix("}")) || pattern == segment
                    }
            }.flatMap(\.methods)
        }
        return Set(methods).sorted()
    }

    private static func segments(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }
}
