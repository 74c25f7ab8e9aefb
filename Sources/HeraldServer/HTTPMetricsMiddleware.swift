import Dispatch
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import Synchronization

/// The request metrics of Hummingbird's `MetricsMiddleware`, with its labels and dimensions
/// (`hb.requests`, `hb.request.errors`, `http.server.request.duration`,
/// `http.server.active_requests`), for the methods HTTP defines. Its series are made per method on
/// first sight, so a client sending methods of its own choosing would make new ones without end;
/// those requests (404 or 405 anyway) go uncounted.
///
/// Recorded when the answer is ready rather than after its body is written: Hummingbird's wraps
/// the body in a closure to time the write, which turns every answer's one write of head, body
/// and end into three, each a hop to the event loop and its own `write` system call. Herald's
/// answers are whole buffers, so the time to write them is the socket's, not the route's.
///
/// At `debug` each request also gets one log line — method, route template, status, duration —
/// through the request's logger, so it carries the request id that the answer echoes.
struct HTTPMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    private let cache = HTTPMetricsCache()
    // A switch, not a set built and hashed for every request.
    private static func isCounted(_ method: HTTPRequest.Method) -> Bool {
        switch method {
        case .get, .head, .post, .put, .delete, .options, .patch: true
        default: false
        }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.isCounted(request.method) else { return try await next(request, context) }
        let start = DispatchTime.now().uptimeNanoseconds
        let active = cache.active(request.method)
        active.increment()
        defer { active.decrement() }
        do {
            let response = try await next(request, context)
            let route = context.endpointPath ?? "Unknown"
            let metrics = cache.endpoint(route, request.method, response.status)
            metrics.requests.increment()
            let elapsed = DispatchTime.now().uptimeNanoseconds - start
            metrics.duration.recordNanoseconds(elapsed)
            Self.log(request, route: route, status: response.status, nanoseconds: elapsed, logger: context.logger)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let route = context.endpointPath ?? "NotFound"
            let metrics = cache.endpoint(route, request.method, status)
            metrics.requests.increment()
            metrics.errors.increment()
            Self.log(request, route: route, status: status, nanoseconds: DispatchTime.now().uptimeNanoseconds - start, logger: context.logger)
            throw error
        }
    }

    /// One line per request at `debug`: the route as a template (never its tokens or ids).
    private static func log(_ request: Request, route: String, status: HTTPResponse.Status, nanoseconds: UInt64, logger: Logger) {
        logger.debug("request", metadata: [
            "method": "\(request.method.rawValue)", "route": "\(route)", "status": "\(status.code)",
            "duration_ms": "\(Double(nanoseconds / 1_000) / 1_000)",
        ])
    }
}

/// Each label set's handles, made once.
private final class HTTPMetricsCache: Sendable {
    struct Endpoint: Sendable {
        let requests: Counter
        let duration: Metrics.Timer
        let errors: Counter
    }

    private struct EndpointKey: Hashable {
        let route: String
        let method: HTTPRequest.Method
        let status: Int
    }

    private let endpoints = Mutex<[EndpointKey: Endpoint]>([:])
    private let methods = Mutex<[HTTPRequest.Method: Meter]>([:])

    func active(_ method: HTTPRequest.Method) -> Meter {
        methods.withLock { map in
            if let meter = map[method] { return meter }
            let meter = Meter(label: "http.server.active_requests", dimensions: [("http.request.method", method.rawValue)])
            map[method] = meter
            return meter
        }
    }

    func endpoint(_ route: String, _ method: HTTPRequest.Method, _ status: HTTPResponse.Status) -> Endpoint {
        let key = EndpointKey(route: route, method: method, status: status.code)
        return endpoints.withLock { map in
            if let endpoint = map[key] { return endpoint }
            let dimensions = [("http.route", route), ("http.request.method", method.rawValue)]
            let code = String(status.code)
            let endpoint = Endpoint(
                requests: Counter(label: "hb.requests", dimensions: dimensions + [("http.response.status_code", code)]),
                duration: Metrics.Timer(
                    label: "http.server.request.duration", dimensions: dimensions + [("http.response.status_code", code)],
                    preferredDisplayUnit: .seconds),
                errors: Counter(label: "hb.request.errors", dimensions: dimensions + [("error.type", code)]))
            map[key] = endpoint
            return endpoint
        }
    }
}
