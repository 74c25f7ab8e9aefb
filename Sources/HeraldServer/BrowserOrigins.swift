import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization

/// The web origins whose pages may call the registration routes (`/v1/push/*`) from a browser
/// (`HERALD_CORS_ORIGINS`): exact
/// `scheme://host[:port]` values, no wildcard. A request from a listed origin gets Hummingbird's
/// CORS headers (a preflight answered 204); any other request is served as if no browser asked,
/// so the browser keeps its page out.
public struct BrowserOrigins: Sendable, Hashable {
    public let origins: Set<String>

    public init(_ origins: Set<String> = []) {
        self.origins = origins
    }

    /// An origin as a browser sends it in `Origin`, or nil when `text` is not one: `http` or
    /// `https`, a host, an optional port, nothing after it.
    public static func origin(_ text: String) -> String? {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            ["http", "https"].contains(scheme), let host = components.host?.lowercased(), !host.isEmpty,
            components.path.isEmpty, components.query == nil, components.fragment == nil, components.user == nil
        else { return nil }
        if let port = components.port {
            guard (1...65_535).contains(port) else { return nil }
            return "\(scheme)://\(host):\(port)"
        }
        return "\(scheme)://\(host)"
    }
}

/// Hummingbird's `CORSMiddleware`, applied only to requests under `paths` whose `Origin` is
/// listed. A page on an unlisted origin sees only "Failed to fetch"; the log says which origin
/// was kept out, once per origin (at most `RefusedOrigins.capacity` of them: the header is the
/// client's to choose).
struct BrowserOriginsMiddleware<Context: RequestContext>: RouterMiddleware {
    let origins: BrowserOrigins
    /// The registration routes (`/v1/push/`) on the API; the Web Push simulator's control API on
    /// the admin listener, for `Examples/web`'s simulator mode.
    var paths = "/v1/push/"
    let refused = RefusedOrigins()
    let cors = CORSMiddleware<Context>(
        allowOrigin: .originBased,
        allowHeaders: [.authorization, .contentType, .xRequestID, HTTPField.Name("X-Herald-App")!, HTTPField.Name("X-Device-ID")!],
        allowMethods: [.get, .post, .put, .delete],
        exposedHeaders: ["X-Request-ID", "Retry-After"],
        maxAge: .seconds(600))

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The registration routes only (docs/security.md): a page never publishes with a publisher key.
        guard request.uri.path.hasPrefix(paths), let origin = request.headers[.origin] else {
            return try await next(request, context)
        }
        guard origins.origins.contains(origin) else {
            if let named = BrowserOrigins.origin(origin), refused.first(named) {
                context.logger.notice(
                    "a page on \(named) called \(paths)… and its browser keeps the answer from it: add the origin to HERALD_CORS_ORIGINS if it is yours")
            }
            return try await next(request, context)
        }
        return try await cors.handle(request, context: context, next: next)
    }
}

/// The origins already named in the log as kept out, bounded.
final class RefusedOrigins: Sendable {
    static let capacity = 32
    private let seen = Mutex<Set<String>>([])

    /// True the first time `origin` is seen, while fewer than `capacity` were.
    func first(_ origin: String) -> Bool {
        seen.withLock { seen in
            guard seen.count < Self.capacity, !seen.contains(origin) else { return false }
            seen.insert(origin)
            return true
        }
    }
}
