import Foundation
import HeraldDelivery
import HeraldPushCore
import HTTPTypes
public import Hummingbird
public import NIOCore
import Synchronization

/// Token buckets by key (a client address, a publisher key): `rate` requests a second on
/// average, up to `burst` at once. A rate of 0 turns the limit off.
public final class RateLimiter: Sendable {
    public struct Limit: Sendable, Hashable {
        public var rate: Double
        public var burst: Double
        public init(rate: Double, burst: Double) {
            self.rate = rate
            self.burst = burst
        }
    }

    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private struct State {
        var buckets: [String: Bucket] = [:]
        /// Pruning walks every bucket: at most once per refill period, not on every request.
        var nextPrune: ContinuousClock.Instant?
    }

    public let limit: Limit
    private let state = Mutex(State())
    /// Past this many keys, buckets that have refilled are forgotten (they hold no state).
    static let pruneAbove = 10_000
    /// The most buckets kept, whatever the clients do (many addresses at once, an IPv6 range):
    /// past it, the least recently used tenth is dropped.
    public static let maximumBuckets = 100_000
    /// The longest wait ever announced (a tiny configured rate must not overflow it).
    static let longestWait = 86_400

    /// How many keys have a bucket now.
    public var bucketCount: Int { state.withLock { $0.buckets.count } }

    public init(_ limit: Limit) {
        self.limit = limit
    }

    /// Takes one token for `key`: nil if there was one, else the whole seconds until there is.
    public func take(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        guard limit.rate > 0 else { return nil }
        return state.withLock { state in
            var bucket = state.buckets[key] ?? Bucket(tokens: limit.burst, updated: now)
            let elapsed = (now - bucket.updated).seconds
            bucket.tokens = min(limit.burst, bucket.tokens + elapsed * limit.rate)
            bucket.updated = now
            defer {
                state.buckets[key] = bucket
                if state.buckets.count > Self.pruneAbove, state.nextPrune.map({ now >= $0 }) ?? true { prune(&state, now: now) }
                if state.buckets.count > Self.maximumBuckets { evictLeastRecentlyUsed(&state) }
            }
            guard bucket.tokens >= 1 else {
                let wait = ((1 - bucket.tokens) / limit.rate).rounded(.up)
                return wait.isFinite ? max(1, Int(min(wait, Double(Self.longestWait)))) : Self.longestWait
            }
            bucket.tokens -= 1
            return nil
        }
    }

    private func evictLeastRecentlyUsed(_ state: inout State) {
        let keep = Self.maximumBuckets * 9 / 10
        let newest = state.buckets.sorted { $0.value.updated > $1.value.updated }.prefix(keep)
        state.buckets = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
    }

    private func prune(_ state: inout State, now: ContinuousClock.Instant) {
        // Clamped: a tiny configured rate must not overflow the next prune time.
        let refill = min(limit.burst / limit.rate, Double(Self.longestWait))
        state.buckets = state.buckets.filter { (now - $0.value.updated).seconds < refill }
        state.nextPrune = now + .seconds(refill)
    }
}

/// The rate limits: registration routes by client address (default 10/s, burst 50),
/// publishing routes by publisher key; over the limit, 429 with `Retry-After`.
public struct RateLimits: Sendable {
    public var registration = RateLimiter.Limit(rate: 10, burst: 50)
    public var publishing = RateLimiter.Limit(rate: 100, burst: 500)
    /// Reverse proxies whose `Forwarded` / `X-Forwarded-For` name the client (none by default:
    /// the peer is the client).
    public var trustedProxies: [IPNetwork] = []
    /// The header those proxies write the client into (`HERALD_TRUSTED_PROXY_HEADER`).
    public var proxyHeader = ProxyHeader.xForwardedFor
    /// The Matrix notify route, by client address (a homeserver): `HERALD_MATRIX_RATE`/`_BURST`.
    public var matrix = RateLimiter.Limit(rate: 200, burst: 1_000)
    /// The homeservers that may call the Matrix notify route (`HERALD_MATRIX_ALLOWED_CLIENTS`;
    /// empty: any, as Sygnal).
    public var matrixClients: [IPNetwork] = []

    public init() {}

    /// The last path component of the routes each limit guards (any `/apps/<id>` prefix aside).
    static let registrationPaths: [String] = [
        "/v1/push/register", "/v1/push/update", "/v1/push/unregister", "/v1/push/status", "/v1/push/read", "/api/devices/token",
        "/api/devices/logout", "/apns/register", "/apns/unregister", "/api/v1/push/register",
    ]
    static let publishingPaths: [String] = ["/v1/events", "/v1/events:batch", "/apns/send"]
    static let matrixPath = "/_matrix/push/v1/notify"
    /// `GET /v1/events/{id}`: counted in its publisher key's bucket.
    static let eventStatusPrefix = "/v1/events/"
}

/// Applies `RateLimits` before a request reaches its route.
struct RateLimitMiddleware<Context: RemoteAddressRequestContext>: RouterMiddleware {
    let registration: RateLimiter
    let publishing: RateLimiter
    let matrix: RateLimiter
    let apps: AppDirectory
    let trustedProxies: [IPNetwork]
    let proxyHeader: ProxyHeader
    let matrixClients: [IPNetwork]

    init(_ limits: RateLimits, apps: AppDirectory) {
        registration = RateLimiter(limits.registration)
        publishing = RateLimiter(limits.publishing)
        matrix = RateLimiter(limits.matrix)
        self.apps = apps
        trustedProxies = limits.trustedProxies
        proxyHeader = limits.proxyHeader
        matrixClients = limits.matrixClients
    }

    /// The client of a request, as `ClientAddress` finds it behind the trusted proxies.
    func client(_ request: Request, context: Context) -> String {
        ClientAddress.of(
            peer: context.remoteAddress?.ipAddress, forwarded: request.headers[.forwarded],
            forwardedFor: request.headers[.xForwardedFor], trusted: trustedProxies, header: proxyHeader)
    }

    /// The path as the router matches it: empty segments (`//`, a trailing `/`) do not count and
    /// escapes are decoded, so no other spelling of a route escapes its limit.
    static func routePath(_ raw: String) -> String {
        // Nearly every path is already in that form: no escape, no empty segment, no trailing "/".
        // Checked byte by byte: Foundation's `contains("//")` cost more than the rest of the limiter.
        let utf8 = raw.utf8
        if utf8.first == UInt8(ascii: "/"), utf8.last != UInt8(ascii: "/"), Self.isNormal(utf8) {
            return raw
        }
        return "/" + raw.split(separator: "/", omittingEmptySubsequences: true)
            .map { $0.removingPercentEncoding ?? String($0) }.joined(separator: "/")
    }

    /// No escape and no empty segment (`//`).
    private static func isNormal(_ path: String.UTF8View) -> Bool {
        var previous: UInt8 = 0
        for byte in path {
            if byte == UInt8(ascii: "%") || (byte == UInt8(ascii: "/") && previous == UInt8(ascii: "/")) { return false }
            previous = byte
        }
        return true
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = Self.routePath(request.uri.path)
        if RateLimits.publishingPaths.contains(where: { path.hasSuffix($0) }) || path.hasPrefix(RateLimits.eventStatusPrefix) {
            try limitPublishing(bearer: AppDirectory.bearer(request))
        } else if RateLimits.registrationPaths.contains(where: { path.hasSuffix($0) }) {
            if let wait = registration.take(ClientAddress.bucket(client(request, context: context))) {
                throw APIError(.tooManyRequests, code: "rate_limited", message: "too many registrations from this address", retryAfter: wait)
            }
        } else if path == RateLimits.matrixPath, request.method == .post {
            let client = client(request, context: context)
            if !matrixClients.isEmpty, !matrixClients.contains(where: { $0.contains(client) }) {
                throw APIError(.forbidden, code: "forbidden", message: "this address may not send Matrix notifications (HERALD_MATRIX_ALLOWED_CLIENTS)")
            }
            if let wait = matrix.take(ClientAddress.bucket(client)) {
                throw APIError(.tooManyRequests, code: "rate_limited", message: "too many notifications from this address", retryAfter: wait)
            }
        }
        return try await next(request, context)
    }

    /// Takes a publishing token for a real publisher key; anything else passes here (its route
    /// answers 401) and gets no bucket, so made-up bearer strings cannot grow memory.
    func limitPublishing(bearer: String?) throws {
        guard let key = bearer, apps.apps.contains(where: { $0.isPublisherKey(key) }) else { return }
        if let wait = publishing.take(key) {
            throw APIError(.tooManyRequests, code: "rate_limited", message: "this publisher key is over its rate limit", retryAfter: wait)
        }
    }
}

extension HTTPField.Name {
    /// RFC 7239's `Forwarded`, and the older `X-Forwarded-For`.
    static let forwarded = HTTPField.Name("Forwarded")!
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}

/// The gateway's request context: Hummingbird's, plus the client's address for rate limits.
public struct HeraldRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
