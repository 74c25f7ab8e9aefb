import Foundation
import HeraldHTTP2
import HeraldPushCore
public import HeraldWebPushCore
public import Logging
public import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import Synchronization

/// How the Web Push client connects.
public struct WebPushClientConfiguration: Sendable {
    /// Which endpoints may be reached (the SSRF rule) and how hosts are resolved.
    public var endpointGuard: WebPushEndpointGuard
    /// Extra trust roots (`HERALD_WEBPUSH_CA_FILE`, a simulator's CA) beside the system's.
    public var trustRootsPEMFiles: [String]
    /// Extra trust roots as PEM text, e.g. an in-process simulator's CA.
    public var trustRootsPEM: [String] = []
    public var connectTimeout: Duration = .seconds(10)
    /// From the request's first byte to the answer's last.
    public var requestTimeout: Duration = .seconds(15)
    /// Keep-alive connections per push-service origin: many origins, modest rates to each.
    public var maximumConnectionsPerOrigin = 8
    /// An answer's body is read up to this many bytes (push services answer with a short text).
    public var maximumResponseBody = 8_192
    /// An origin with nothing in flight for this long has its connections closed and is
    /// forgotten: anyone may register endpoints on many hosts, and each would otherwise keep a
    /// connection (HTTP/2 pings it) for ever.
    public var idleTimeout: Duration = .seconds(300)

    public init(endpointGuard: WebPushEndpointGuard = .init(), trustRootsPEMFiles: [String] = []) {
        self.endpointGuard = endpointGuard
        self.trustRootsPEMFiles = trustRootsPEMFiles
    }
}

/// A push service's answer.
public struct WebPushResponse: Sendable, Hashable {
    public var status: Int
    public var retryAfter: String?
    /// The first `maximumResponseBody` bytes.
    public var body: [UInt8]
}

/// Why a message did not reach a push service.
public enum WebPushTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The endpoint is inside (SSRF) or does not resolve: nothing was sent.
    case endpoint(WebPushEndpointError)
    case connect(String)
    case timeout
    /// The connection closed or failed before the whole answer came.
    case connection(String)
    case shutDown

    public var description: String {
        switch self {
        case .endpoint(let error): error.description
        case .connect(let text): "cannot connect: \(text)"
        case .timeout: "no answer within the request timeout"
        case .connection(let text): "connection lost: \(text)"
        case .shutDown: "the Web Push client is shut down"
        }
    }
}

/// Sends Web Push messages (RFC 8030) over TLS to any number of push-service origins: over
/// HTTP/2 where the service offers it (one multiplexed connection per origin, on the pool APNs
/// and FCM use), else over HTTP/1.1 with a few keep-alive connections per origin. The first
/// connection to an origin asks for both (ALPN) and the answer decides. Every connection goes to
/// an address `WebPushEndpointGuard` checked, never follows a redirect, and reads at most a few
/// KiB of an HTTP/1.1 answer: a push service is a peer Herald does not trust.
///
/// AsyncHTTPClient resolves hosts itself, so it cannot be held to checked addresses; this client
/// opens its connections to the addresses it checked.
public final class WebPushClient: Sendable {
    private struct Origin {
        var idle: [Connection] = []
        var open = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// Set once the origin answered ALPN with `h2`.
        var http2: HTTP2ConnectionPool?
        /// Sends under way (waiting, connecting or in flight).
        var inFlight = 0
        var lastUsed = NIODeadline.now()
    }

    private struct State {
        var origins: [String: Origin] = [:]
        var shutDown = false
        var sweeper: RepeatedTask?
    }

    public let configuration: WebPushClientConfiguration
    private let group: any EventLoopGroup
    private let sslContext: NIOSSLContext
    private let http2Context: NIOSSLContext
    private let state = Mutex(State())
    private let logger: Logger

    public init(configuration: WebPushClientConfiguration, eventLoopGroup: any EventLoopGroup, logger: Logger = Logger(label: "herald.webpush")) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2", "http/1.1"]
        tls.shutdownTimeout = .seconds(1)
        tls.additionalTrustRoots = try HTTP2ConnectionFactory.trustRoots(files: configuration.trustRootsPEMFiles, pem: configuration.trustRootsPEM)
        self.sslContext = try NIOSSLContext(configuration: tls)
        tls.applicationProtocols = ["h2"]
        self.http2Context = try NIOSSLContext(configuration: tls)
        self.configuration = configuration
        self.group = eventLoopGroup
        self.logger = logger
        let sweep = TimeAmount(configuration.idleTimeout / 2)
        let sweeper = eventLoopGroup.next().scheduleRepeatedTask(initialDelay: sweep, delay: sweep) { [weak self] _ in self?.closeIdleOrigins() }
        state.withLock { $0.sweeper = sweeper }
    }

    /// Connections open to push services: HTTP/1.1 ones and the HTTP/2 pools' connections.
    public var connectionsOpen: Int {
        let (http1, pools) = state.withLock { s in (s.origins.values.map(\.open).reduce(0, +), s.origins.values.compactMap(\.http2)) }
        return http1 + pools.map(\.openConnections).reduce(0, +)
    }

    /// How many push-service origins have connections or sends (for tests and stats).
    public var origins: Int { state.withLock { $0.origins.count } }

    /// Forgets the origins idle for `idleTimeout`, closing their connections.
    private func closeIdleOrigins() {
        let cutoff = NIODeadline.now() - TimeAmount(configuration.idleTimeout)
        let (connections, pools) = state.withLock { state -> ([Connection], [HTTP2ConnectionPool]) in
            let idle = state.origins.filter { $0.value.inFlight == 0 && $0.value.waiters.isEmpty && $0.value.lastUsed <= cutoff }
            for key in idle.keys { state.origins[key] = nil }
            return (idle.values.flatMap(\.idle), idle.values.compactMap(\.http2))
        }
        for connection in connections { connection.channel.close(promise: nil) }
        if !pools.isEmpty { Task { for pool in pools { await pool.shutdown() } } }
    }

    /// Sends one message and returns the push service's answer, whatever its status.
    public func send(_ message: WebPushMessage) async throws(WebPushTransportError) -> WebPushResponse {
        let endpoint = message.endpoint
        let origin = endpoint.origin
        state.withLock { $0.origins[origin, default: Origin()].inFlight += 1 }
        defer {
            state.withLock { state in
                state.origins[origin]?.inFlight -= 1
                state.origins[origin]?.lastUsed = .now()
            }
        }
        let connection: Connection
        switch try await acquire(origin: origin, endpoint: endpoint) {
        case .http2(let pool): return try await send(message, on: pool)
        case .http1(let open): connection = open
        }
        var reusable = false
        defer { release(connection, origin: origin, reusable: reusable) }
        let (response, keepAlive) = try await connection.send(
            head: Self.head(for: message), body: message.body, timeout: TimeAmount(configuration.requestTimeout),
            limit: configuration.maximumResponseBody)
        reusable = keepAlive
        return response
    }

    /// Sends several messages and returns each one's answer or failure, in their order. Messages
    /// to an origin known to speak HTTP/2 go to its pool together: one hop to the event loop, one
    /// flush, one wake-up when the last answer is in. The rest are sent one by one, side by side.
    public func send(_ messages: [WebPushMessage]) async -> [Result<WebPushResponse, WebPushTransportError>] {
        var byOrigin: [String: [Int]] = [:]
        for (index, message) in messages.enumerated() { byOrigin[message.endpoint.origin, default: []].append(index) }
        var results = [Result<WebPushResponse, WebPushTransportError>?](repeating: nil, count: messages.count)
        await withTaskGroup(of: [(Int, Result<WebPushResponse, WebPushTransportError>)].self) { group in
            for (origin, indices) in byOrigin {
                guard indices.count > 1, let pool = state.withLock({ $0.origins[origin]?.http2 }) else {
                    for index in indices {
                        group.addTask {
                            do throws(WebPushTransportError) {
                                return [(index, .success(try await self.send(messages[index])))]
                            } catch {
                                return [(index, .failure(error))]
                            }
                        }
                    }
                    continue
                }
                group.addTask {
                    let answers = await self.send(indices.map { messages[$0] }, origin: origin, on: pool)
                    return Array(zip(indices, answers))
                }
            }
            for await answers in group { for (index, result) in answers { results[index] = result } }
        }
        return results.map { $0! }
    }

    /// Messages to one HTTP/2 origin as streams submitted together.
    private func send(
        _ messages: [WebPushMessage], origin: String, on pool: HTTP2ConnectionPool
    ) async -> [Result<WebPushResponse, WebPushTransportError>] {
        state.withLock { $0.origins[origin, default: Origin()].inFlight += messages.count }
        defer {
            state.withLock { state in
                state.origins[origin]?.inFlight -= messages.count
                state.origins[origin]?.lastUsed = .now()
            }
        }
        let futures = pool.submit(messages.map(Self.request), deadline: .now() + TimeAmount(configuration.requestTimeout))
        // Every future completes (an answer or a transport failure): one wait for them all.
        let all = try? await EventLoopFuture.whenAllComplete(futures, on: futures[0].eventLoop).get()
        return (all ?? []).map { result in
            result.mapError(Self.transportError).map(response)
        }
    }

    /// One message as an HTTP/2 stream on the origin's pool.
    private func send(_ message: WebPushMessage, on pool: HTTP2ConnectionPool) async throws(WebPushTransportError) -> WebPushResponse {
        do {
            return response(try await pool.submit(Self.request(message), deadline: .now() + TimeAmount(configuration.requestTimeout)).get())
        } catch {
            throw Self.transportError(error)
        }
    }

    /// A message as an HTTP/2 request.
    private static func request(_ message: WebPushMessage) -> HTTP2Request {
        var headers = HPACKHeaders()
        headers.reserveCapacity(7)
        for (header, value) in message.headers { headers.add(name: header.lowercasedName, value: value) }
        headers.add(name: "content-length", value: String(message.body.count))
        return HTTP2Request(path: message.endpoint.target, headers: headers, body: ByteBuffer(bytes: message.body))
    }

    /// An HTTP/2 answer as the push service's response, its body cut at the limit.
    private func response(_ response: HTTP2Response) -> WebPushResponse {
        var body = response.body
        return WebPushResponse(
            status: response.status, retryAfter: response.headers.first(name: "retry-after"),
            body: body.readBytes(length: min(body.readableBytes, configuration.maximumResponseBody)) ?? [])
    }

    /// Why an HTTP/2 stream got no answer, in this client's terms.
    private static func transportError(_ error: any Error) -> WebPushTransportError {
        guard let failure = error as? TransportFailure else { return .connection("\(error)") }
        if case .deadlineExceeded = failure { return .timeout }
        return .connection(failure.description)
    }

    /// Closes every idle connection and every HTTP/2 pool; sends after this fail.
    public func shutdown() async {
        let (idle, waiters, pools) = state.withLock { state -> ([Connection], [CheckedContinuation<Void, Never>], [HTTP2ConnectionPool]) in
            state.shutDown = true
            state.sweeper?.cancel()
            let idle = state.origins.values.flatMap(\.idle)
            let waiters = state.origins.values.flatMap(\.waiters)
            let pools = state.origins.values.compactMap(\.http2)
            state.origins = [:]
            return (idle, waiters, pools)
        }
        for waiter in waiters { waiter.resume() }
        for connection in idle { try? await connection.channel.close() }
        for pool in pools { await pool.shutdown() }
    }

    /// What a send goes on: the origin's HTTP/2 pool, or one of its HTTP/1.1 connections.
    private enum Acquired { case http2(HTTP2ConnectionPool), http1(Connection) }

    /// The origin's HTTP/1.1 connections, per count; a request over the limit waits for a release.
    private enum Step { case http2(HTTP2ConnectionPool), use(Connection), connect, wait, shutDown }

    private func acquire(origin: String, endpoint: WebPushEndpoint) async throws(WebPushTransportError) -> Acquired {
        while true {
            let step = state.withLock { state -> Step in
                if state.shutDown { return .shutDown }
                var entry = state.origins[origin, default: Origin()]
                defer { state.origins[origin] = entry }
                if let pool = entry.http2 { return .http2(pool) }
                while let connection = entry.idle.popLast() {
                    if connection.channel.isActive { return .use(connection) }
                    entry.open -= 1
                }
                guard entry.open < configuration.maximumConnectionsPerOrigin else { return .wait }
                entry.open += 1
                return .connect
            }
            switch step {
            case .shutDown: throw .shutDown
            case .http2(let pool): return .http2(pool)
            case .use(let connection): return .http1(connection)
            case .connect:
                let connection: Connection
                do {
                    connection = try await connect(endpoint)
                } catch {
                    release(nil, origin: origin, reusable: false)
                    throw error
                }
                guard connection.protocol == "h2" else { return .http1(connection) }
                // The service speaks HTTP/2 (the probe is closed): this origin's pushes go as
                // streams on one pool from now on.
                // Requests waiting for an HTTP/1.1 connection take the pool too.
                let (pool, waiters) = state.withLock { state -> (HTTP2ConnectionPool?, [CheckedContinuation<Void, Never>]) in
                    guard !state.shutDown, var entry = state.origins[origin] else { return (nil, []) }
                    defer { state.origins[origin] = entry }
                    entry.open -= 1
                    if entry.http2 == nil { entry.http2 = makePool(for: endpoint) }
                    defer { entry.waiters = [] }
                    return (entry.http2, entry.waiters)
                }
                for waiter in waiters { waiter.resume() }
                guard let pool else { throw .shutDown }
                return .http2(pool)
            case .wait:
                await withCheckedContinuation { continuation in
                    let resumeNow = state.withLock { state -> Bool in
                        guard !state.shutDown, state.origins[origin] != nil else { return true }
                        state.origins[origin]!.waiters.append(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    private func release(_ connection: Connection?, origin: String, reusable: Bool) {
        let (waiter, close) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Connection?) in
            guard var entry = state.origins[origin] else { return (nil, connection) }
            defer { state.origins[origin] = entry }
            var close: Connection?
            if let connection, reusable, !state.shutDown, connection.channel.isActive {
                entry.idle.append(connection)
            } else {
                entry.open -= 1
                close = connection
            }
            return (entry.waiters.isEmpty ? nil : entry.waiters.removeFirst(), close)
        }
        close?.channel.close(promise: nil)
        waiter?.resume()
    }

    /// Resolves and checks the endpoint's host, then connects to the first checked address that answers.
    private func connect(_ endpoint: WebPushEndpoint) async throws(WebPushTransportError) -> Connection {
        let addresses: [SocketAddress]
        do {
            addresses = try await configuration.endpointGuard.addresses(for: endpoint)
        } catch {
            throw .endpoint(error)
        }
        // No SNI for an IP literal: NIOSSL then checks the certificate against the address.
        let serverName = IPAddressLiteral.bytes(endpoint.host) == nil ? endpoint.host : nil
        var lastError = "no address"
        for address in addresses {
            do {
                return try await Connection.open(
                    to: address, serverName: serverName, sslContext: sslContext, group: group,
                    connectTimeout: TimeAmount(configuration.connectTimeout))
            } catch {
                lastError = "\(error)"
            }
        }
        logger.debug("web push connect failed", metadata: ["host": "\(endpoint.host)", "error": "\(lastError)"])
        throw .connect(lastError)
    }

    /// An HTTP/2 pool for one origin, connecting only to the addresses the guard checks.
    private func makePool(for endpoint: WebPushEndpoint) -> HTTP2ConnectionPool {
        let guardian = configuration.endpointGuard
        let factory = HTTP2ConnectionFactory(
            host: endpoint.host, port: endpoint.port, authority: endpoint.authority, sslContext: http2Context, connectTimeout: configuration.connectTimeout,
            pingInterval: .seconds(60), pingTimeout: .seconds(10),
            addresses: { try await guardian.addresses(for: endpoint) })
        return HTTP2ConnectionPool(factory: factory, group: group, size: 1, logger: logger)
    }

    static func head(for message: WebPushMessage) -> HTTPRequestHead {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: message.endpoint.authority)
        for (header, value) in message.headers { headers.add(name: header.name, value: value) }
        headers.add(name: "Content-Length", value: String(message.body.count))
        return HTTPRequestHead(version: .http1_1, method: .POST, uri: message.endpoint.target, headers: headers)
    }
}

/// One keep-alive HTTP/1.1 connection: one request at a time.
struct Connection: Sendable {
    let channel: any Channel
    /// Nil for an HTTP/2 probe, which carries no request.
    let handler: NIOLoopBound<ResponseHandler>?
    /// What ALPN settled on (`h2`, `http/1.1`, or nil when the server chose nothing).
    let `protocol`: String?

    static func open(
        to address: SocketAddress, serverName: String?, sslContext: NIOSSLContext, group: any EventLoopGroup, connectTimeout: TimeAmount
    ) async throws -> Connection {
        let eventLoop = group.next()
        // Made here, not looked up later: an h2 server's first frames reach the HTTP/1.1 decoder,
        // which fails and closes the channel, perhaps before a lookup could run.
        let negotiated = eventLoop.makePromise(of: String?.self)
        let channel = try await ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverName))
                    try sync.addHandler(ALPNRecorder(promise: negotiated))
                    try sync.addHTTPClientHandlers()
                    try sync.addHandler(ResponseHandler())
                }
            }
            .connect(to: address).get()
        // The handshake has the connect's deadline too: a peer that accepts TCP and never
        // finishes TLS is given up on, not waited for.
        let handshake = channel.eventLoop.scheduleTask(in: connectTimeout) {
            negotiated.fail(WebPushTransportError.connect("no TLS handshake within the connect timeout"))
            channel.close(promise: nil)
        }
        defer { handshake.cancel() }
        let chosen = try await negotiated.futureResult.get()
        // An HTTP/2 origin's probe is closed at once: its pushes go on the HTTP/2 pool.
        guard chosen != "h2" else {
            channel.close(promise: nil)
            return Connection(channel: channel, handler: nil, protocol: chosen)
        }
        let handler = try await channel.eventLoop.submit {
            NIOLoopBound(try channel.pipeline.syncOperations.handler(type: ResponseHandler.self), eventLoop: channel.eventLoop)
        }.get()
        return Connection(channel: channel, handler: handler, protocol: chosen)
    }

    /// Writes the request and waits for the whole answer; the Bool says whether the connection
    /// may carry another request.
    func send(head: HTTPRequestHead, body: [UInt8], timeout: TimeAmount, limit: Int) async throws(WebPushTransportError) -> (WebPushResponse, Bool) {
        let channel = self.channel
        guard let handler = self.handler else { throw .connection("not an HTTP/1.1 connection") }
        let future = channel.eventLoop.flatSubmit { () -> EventLoopFuture<(WebPushResponse, Bool)> in
            let promise = channel.eventLoop.makePromise(of: (WebPushResponse, Bool).self)
            handler.value.begin(promise: promise, limit: limit)
            let timer = channel.eventLoop.scheduleTask(in: timeout) {
                handler.value.fail(WebPushTransportError.timeout)
                channel.close(promise: nil)
            }
            promise.futureResult.whenComplete { _ in timer.cancel() }
            channel.write(HTTPClientRequestPart.head(head), promise: nil)
            channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
            channel.writeAndFlush(HTTPClientRequestPart.end(nil)).whenFailure { error in
                handler.value.fail(WebPushTransportError.connection("\(error)"))
            }
            return promise.futureResult
        }
        do {
            return try await future.get()
        } catch let error as WebPushTransportError {
            throw error
        } catch {
            throw .connection("\(error)")
        }
    }
}

/// Completes once the TLS handshake has: with the protocol ALPN chose.
final class ALPNRecorder: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Any
    let negotiated: EventLoopPromise<String?>

    init(promise: EventLoopPromise<String?>) { negotiated = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted(let negotiatedProtocol) = event { negotiated.succeed(negotiatedProtocol) }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        negotiated.fail(WebPushTransportError.connection("closed during the TLS handshake"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        negotiated.fail(error)
        context.fireErrorCaught(error)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        negotiated.fail(WebPushTransportError.connection("closed during the TLS handshake"))
    }
}

/// Collects one answer at a time: its status, `Retry-After`, and the body up to a limit.
final class ResponseHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    private var promise: EventLoopPromise<(WebPushResponse, Bool)>?
    private var response = WebPushResponse(status: 0, retryAfter: nil, body: [])
    private var keepAlive = false
    private var limit = 0

    func begin(promise: EventLoopPromise<(WebPushResponse, Bool)>, limit: Int) {
        self.promise = promise
        self.limit = limit
        response = WebPushResponse(status: 0, retryAfter: nil, body: [])
    }

    func fail(_ error: WebPushTransportError) {
        promise?.fail(error)
        promise = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            // 1xx interim answers carry nothing for a push.
            guard head.status.code >= 200 else { return }
            response.status = Int(head.status.code)
            response.retryAfter = head.headers.first(name: "Retry-After")
            keepAlive = head.isKeepAlive
        case .body(var buffer):
            let room = max(0, limit - response.body.count)
            if room > 0, let bytes = buffer.readBytes(length: min(room, buffer.readableBytes)) { response.body += bytes }
            // Past the cap the answer is taken as it is and the connection closed: the rest of
            // an endless body is never read.
            if buffer.readableBytes > 0, response.status != 0 {
                promise?.succeed((response, false))
                promise = nil
                context.close(promise: nil)
            }
        case .end:
            guard response.status != 0 else { return }
            promise?.succeed((response, keepAlive))
            promise = nil
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(.connection("closed by the push service"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(.connection("\(error)"))
        context.close(promise: nil)
    }
}
