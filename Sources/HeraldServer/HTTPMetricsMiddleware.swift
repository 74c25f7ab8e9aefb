import HTTPTypes
import Hummingbird

/// Hummingbird's request metrics (count, duration histogram, errors, active requests) for the
/// methods HTTP defines. Its series are made per method on first sight, so a client sending
/// methods of its own choosing would make new ones without end; those requests (404 or 405
/// anyway) go uncounted.
struct HTTPMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    private let metrics = MetricsMiddleware<Context>()
    private static var counted: Set<HTTPRequest.Method> { [.get, .head, .post, .put, .delete, .options, .patch] }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.counted.contains(request.method) else { return try await next(request, context) }
        return try await metrics.handle(request, context: context, next: next)
    }
}
