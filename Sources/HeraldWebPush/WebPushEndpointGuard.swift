#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HeraldPushCore
public import HeraldWebPushCore
public import NIOCore
import NIOPosix
import Synchronization

/// Looks up the addresses of a push service's host.
public protocol WebPushHostResolver: Sendable {
    /// Every address `host` resolves to (4 or 16 bytes each), in the resolver's order; none when
    /// the name does not exist.
    /// - Throws: `WebPushLookupFailure` when the lookup failed for now (the DNS server erred or
    ///   did not answer).
    func addresses(of host: String) async throws -> [[UInt8]]
}

/// A lookup that failed for now, not a name that does not exist.
public struct WebPushLookupFailure: Error, Sendable {
    public init() {}
}

/// The system's resolver (`getaddrinfo`), on threads of its own so a slow DNS server never holds
/// an event loop, a task's thread or NIO's shared blocking pool. A lookup cannot be cancelled:
/// one a DNS server never answers holds its thread until the system resolver gives up, past the
/// guard's deadline. So at most `maximumOutstanding` run at once; past that a lookup fails for
/// now at once (`WebPushLookupFailure`: the push waits), and hosts anyone can name cannot queue
/// work without end.
public final class SystemHostResolver: WebPushHostResolver {
    /// Lookups running at once, those past their deadline included.
    public static let maximumOutstanding = 32
    private let pool: NIOThreadPool
    private let outstanding = Mutex(0)
    private let lookup: @Sendable (String) throws -> [[UInt8]]

    /// - Parameters:
    ///   - threads: the lookups' own threads.
    ///   - lookup: the blocking lookup (`getaddrinfo` by default; tests give a slow one).
    public init(threads: Int = 4, lookup: @escaping @Sendable (String) throws -> [[UInt8]] = SystemHostResolver.getaddrinfo) {
        pool = NIOThreadPool(numberOfThreads: threads)
        pool.start()
        self.lookup = lookup
    }

    deinit { pool.shutdownGracefully { _ in } }

    /// Lookups running now.
    public var running: Int { outstanding.withLock { $0 } }

    public func addresses(of host: String) async throws -> [[UInt8]] {
        if let literal = IPAddressLiteral.bytes(host) { return [literal] }
        let admitted = outstanding.withLock { count in
            guard count < Self.maximumOutstanding else { return false }
            count += 1
            return true
        }
        guard admitted else { throw WebPushLookupFailure() }
        defer { outstanding.withLock { $0 -= 1 } }
        let lookup = self.lookup
        return try await pool.runIfActive { try lookup(host) }
    }

    /// `getaddrinfo`'s addresses of `host`, each once; `WebPushLookupFailure` for `EAI_AGAIN`.
    @Sendable public static func getaddrinfo(_ host: String) throws -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        #if canImport(Glibc)
        let status = Glibc.getaddrinfo(host, nil, &hints, &list)
        #else
        let status = Darwin.getaddrinfo(host, nil, &hints, &list)
        #endif
        // EAI_AGAIN: the name server failed for now (EAI_NONAME and the rest: no such name).
        if status == EAI_AGAIN { throw WebPushLookupFailure() }
        guard status == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var out: [[UInt8]] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let entry = next {
            switch entry.pointee.ai_family {
            case AF_INET:
                entry.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    out.append(withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) })
                }
            case AF_INET6:
                entry.pointee.ai_addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    out.append(withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) })
                }
            default: break
            }
            next = entry.pointee.ai_next
        }
        var seen = Set<[UInt8]>()
        return out.filter { seen.insert($0).inserted }
    }
}

/// Where Herald may send a push: the endpoint's host is resolved and every address checked
/// against the policy, and only checked addresses are connected to, so a name that resolves
/// somewhere else on the next lookup (DNS rebinding) gains nothing. Registration and every send
/// go through it.
public struct WebPushEndpointGuard: Sendable {
    public let policy: WebPushAddressPolicy
    let resolver: any WebPushHostResolver
    /// A lookup not answered within this counts as unresolved: a host's DNS server is anyone's to
    /// run, and a silent one must not hold a send (the lookup itself finishes on its own thread).
    public var resolveTimeout: Duration = .seconds(5)

    public init(policy: WebPushAddressPolicy = .init(), resolver: any WebPushHostResolver = SystemHostResolver()) {
        self.policy = policy
        self.resolver = resolver
    }

    /// The resolver's answer; nil when the lookup failed for now or `resolveTimeout` passed.
    private func resolve(_ host: String) async -> [[UInt8]]? {
        let resolver = self.resolver
        let timeout = resolveTimeout
        return await withCheckedContinuation { continuation in
            let answer = FirstAnswer<[[UInt8]]?>(continuation)
            Task {
                do { answer.resume(try await resolver.addresses(of: host)) } catch { answer.resume(nil) }
            }
            Task {
                try? await Task.sleep(for: timeout)
                answer.resume(nil)
            }
        }
    }

    /// The socket addresses to connect to for `endpoint`.
    /// - Throws: `WebPushEndpointError.internalAddress` when any address is inside (or none resolves).
    public func addresses(for endpoint: WebPushEndpoint) async throws(WebPushEndpointError) -> [SocketAddress] {
        guard let resolved = await resolve(endpoint.host) else { throw .unavailable(endpoint.host) }
        guard !resolved.isEmpty else { throw .unresolved(endpoint.host) }
        try policy.check(endpoint, resolvedTo: resolved)
        return resolved.compactMap { try? SocketAddress(ipAddress: WebPushAddressPolicy.format($0), port: endpoint.port) }
    }
}

/// Resumes a continuation with the first of several answers.
private final class FirstAnswer<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, Never>?>

    init(_ continuation: CheckedContinuation<T, Never>) { self.continuation = Mutex(continuation) }

    func resume(_ value: T) { continuation.withLock { $0.take() }?.resume(returning: value) }
}
