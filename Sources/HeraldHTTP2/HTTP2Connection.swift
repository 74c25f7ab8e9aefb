package import Foundation
import HeraldPushCore
import Logging
package import NIOCore
import NIOHPACK
package import NIOHTTP2
import NIOPosix
package import NIOSSL

/// What a connection reports to its pool. Called on the connection's event loop.
package struct HTTP2ConnectionEvents: Sendable {
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS changed (the first call means "ready").
    var maxConcurrentStreamsChanged: @Sendable (Int) -> Void
    /// No new streams on this connection: the server sent GOAWAY, or it failed its health check.
    var retired: @Sendable () -> Void
    /// The connection closed.
    var closed: @Sendable () -> Void
}

/// Speaks HTTP/2 to a push service (APNs, FCM) on one connection, at the frame level.
///
/// It numbers the streams itself and keeps a table of requests in flight instead of a child
/// channel per request: the per-push cost is then a dictionary entry and two frames. It also
/// follows SETTINGS (the live stream limit), GOAWAY, PING health checks, the connection's
/// flow-control window and each request's deadline.
package final class HTTP2ConnectionHandler: ChannelDuplexHandler {
    package typealias InboundIn = HTTP2Frame
    package typealias OutboundIn = Never
    package typealias OutboundOut = HTTP2ClientWrite

    /// What HTTP/2 assumes when a server's SETTINGS names no limit: unlimited; we cap it.
    static let defaultMaxConcurrentStreams = 1_000
    /// Past this stream id the connection is retired (HTTP/2 ids end at 2^31 - 1).
    package static let lastUsableStreamID = Int32.max - 1_000
    /// The largest answer body kept: APNs's and FCM's answers are well under a kilobyte, and a
    /// peer streaming more would only grow memory. Past it the stream is reset and fails.
    package static let maximumResponseBody = 65_536
    /// Give the server back its connection window once this much DATA has arrived.
    static let windowUpdateThreshold = 32_768

    private struct Pending {
        var promise: EventLoopPromise<HTTP2Response>
        var deadline: NIODeadline
        var status: Int?
        var headers = HPACKHeaders()
        var body: ByteBuffer?
        var headersWritten = false
    }

    private let events: HTTP2ConnectionEvents
    private let flushes: SocketFlushCoalescer
    private let authority: String
    private let lastUsableStreamID: Int32
    private let pingInterval: TimeAmount
    private let pingTimeout: TimeAmount
    private var context: ChannelHandlerContext?
    private var pending: [HTTP2StreamID: Pending] = [:]
    private var nextStreamID = HTTP2StreamID(1)
    /// Streams in the order they were opened: their deadlines are in order too, since they
    /// share one timeout. One timer for the head replaces a timer per request.
    private var deadlineOrder = CircularBuffer<(HTTP2StreamID, NIODeadline)>()
    private var deadlineTimer: Scheduled<Void>?
    private var goAwayLastStreamID: HTTP2StreamID?
    private var sawSettings = false
    private var unacknowledgedData = 0
    private var pingTask: Scheduled<Void>?
    private var pongDeadline: Scheduled<Void>?
    private var lastActivity = NIODeadline.now()

    init(
        events: HTTP2ConnectionEvents, flushes: SocketFlushCoalescer, authority: String, pingInterval: TimeAmount,
        pingTimeout: TimeAmount, lastUsableStreamID: Int32 = HTTP2ConnectionHandler.lastUsableStreamID
    ) {
        self.events = events
        self.flushes = flushes
        self.authority = authority
        self.lastUsableStreamID = lastUsableStreamID
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
    }

    package func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { schedulePing(context: context) }
    }

    package func channelActive(context: ChannelHandlerContext) {
        schedulePing(context: context)
        context.fireChannelActive()
    }

    // MARK: Sending

    /// Opens a stream for `request`. Must run on the event loop.
    func send(_ request: HTTP2Request, deadline: NIODeadline, promise: EventLoopPromise<HTTP2Response>) {
        guard let context, context.channel.isActive, goAwayLastStreamID == nil else {
            promise.fail(TransportFailure.notProcessed)
            return
        }
        let streamID = nextStreamID
        nextStreamID = HTTP2StreamID(Int32(streamID) + 2)
        if Int32(nextStreamID) > lastUsableStreamID {
            // Stream ids are never reused (RFC 9113 §5.1.1): retire the connection before they run out.
            retireForStreamIDs(context: context)
        }
        pending[streamID] = Pending(promise: promise, deadline: deadline)
        deadlineOrder.append((streamID, deadline))
        if deadlineTimer == nil { armDeadlineTimer() }

        let hasBody = request.body.readableBytes > 0
        let headersWritten = context.eventLoop.makePromise(of: Void.self)
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        headersWritten.futureResult.whenComplete { result in
            let handler = loopBound.value
            switch result {
            case .success: handler.pending[streamID]?.headersWritten = true
            // The stream never went out (GOAWAY, closed connection): the server never saw it.
            case .failure: handler.finish(streamID, .failure(TransportFailure.notProcessed))
            }
        }
        let outgoing = HTTP2OutgoingRequest(
            streamID: streamID, method: request.method, path: request.path, authority: authority, headers: request.headers,
            body: hasBody ? request.body : nil)
        context.write(wrapOutboundOut(.request(outgoing)), promise: headersWritten)
        // HTTP/2 is flushed per stream, so this stream's DATA follows its HEADERS on the wire.
        // Beside other streams in flight the socket write waits for the loop's turn to end and
        // is shared with the streams other tasks open in it (the connection is busy, so the
        // wait costs no latency); a stream alone on its connection (APNs allows one at a time
        // after a rejection) goes at once. Inside a read the write waits for the read's end.
        if pending.count > 1 { flushes.holdUntilTurnEnds() }
        context.flush()
    }

    /// Opens a stream for each request (the batch a caller already has in hand), in one hop to
    /// the event loop and one socket write at the turn's end: the batch's streams do not wait
    /// for each other's answers, so holding the first for the rest costs no latency.
    func send(_ batch: [(HTTP2Request, EventLoopPromise<HTTP2Response>)], deadline: NIODeadline) {
        if batch.count > 1 { flushes.holdUntilTurnEnds() }
        for (request, promise) in batch { send(request, deadline: deadline, promise: promise) }
    }

    /// Control frames written in one event-loop turn share one socket write.
    private func scheduleFlush(context: ChannelHandlerContext) {
        flushes.holdUntilTurnEnds()
        context.flush()
    }

    private func finish(_ streamID: HTTP2StreamID, _ result: Result<HTTP2Response, any Error>) {
        guard let entry = pending.removeValue(forKey: streamID) else { return }
        entry.promise.completeWith(result)
        while let head = deadlineOrder.first, pending[head.0] == nil { deadlineOrder.removeFirst() }
    }

    // MARK: Receiving

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        lastActivity = .now()
        switch frame.payload {
        case .headers(let payload):
            guard let index = pending.index(forKey: frame.streamID) else { return }
            if pending.values[index].status == nil {
                guard let value = payload.headers.first(name: ":status"), let code = Int(value) else {
                    finish(frame.streamID, .failure(TransportFailure.protocolError("response without :status")))
                    return
                }
                if code >= 100, code < 200 { return }  // informational; the real answer follows
                pending.values[index].status = code
                pending.values[index].headers = payload.headers
            }
            if payload.endStream { complete(frame.streamID) }
        case .data(let payload):
            var received = 0
            if case .byteBuffer(var buffer) = payload.data {
                received = buffer.readableBytes
                if pending[frame.streamID] != nil, (pending[frame.streamID]!.body?.readableBytes ?? 0) + received > Self.maximumResponseBody {
                    // Past the cap: the answer's head says what the service made of the request,
                    // so it is taken with its body cut there, and the rest is not read (the stream
                    // is cancelled). Data before any head is a protocol error.
                    if pending[frame.streamID]!.status != nil {
                        let room = Self.maximumResponseBody - (pending[frame.streamID]!.body?.readableBytes ?? 0)
                        if room > 0, var slice = buffer.readSlice(length: room) {
                            if pending[frame.streamID]!.body == nil { pending[frame.streamID]!.body = slice } else { pending[frame.streamID]!.body!.writeBuffer(&slice) }
                        }
                        complete(frame.streamID)
                    } else {
                        finish(frame.streamID, .failure(TransportFailure.protocolError("answer body over \(Self.maximumResponseBody) bytes")))
                    }
                    context.write(wrapOutboundOut(.frame(HTTP2Frame(streamID: frame.streamID, payload: .rstStream(.cancel)))), promise: nil)
                    scheduleFlush(context: context)
                } else if let index = pending.index(forKey: frame.streamID) {
                    if pending.values[index].body == nil {
                        pending.values[index].body = buffer
                    } else {
                        pending.values[index].body!.writeBuffer(&buffer)
                    }
                }
            }
            if payload.endStream { complete(frame.streamID) }
            // Only after the answer is complete: writing may deliver NIOHTTP2's pending
            // stream-closed events re-entrantly.
            returnWindow(received, context: context)
        case .rstStream(let code):
            let entry = pending[frame.streamID]
            let unprocessed = entry?.status == nil && (code == .refusedStream || entry?.headersWritten == false)
            finish(frame.streamID, .failure(unprocessed ? TransportFailure.notProcessed : TransportFailure.connectionClosed))
        case .settings(.settings(let settings)):
            var limit: Int? = sawSettings ? nil : Self.defaultMaxConcurrentStreams
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                limit = min(setting.value, Self.defaultMaxConcurrentStreams)
            }
            sawSettings = true
            if let limit { events.maxConcurrentStreamsChanged(limit) }
        case .goAway(let lastStreamID, _, _):
            goAwayLastStreamID = lastStreamID
            // The pool first, so the retries below cannot lease this connection again.
            events.retired()
            // Streams past the server's last one were never processed: safe to send elsewhere.
            for id in pending.keys where id > lastStreamID {
                finish(id, .failure(TransportFailure.notProcessed))
            }
        case .ping(_, ack: true):
            pongDeadline?.cancel()
            pongDeadline = nil
        default:
            break
        }
    }

    private func complete(_ streamID: HTTP2StreamID) {
        guard let entry = pending[streamID] else { return }
        guard let status = entry.status else {
            finish(streamID, .failure(TransportFailure.protocolError("stream ended without headers")))
            return
        }
        finish(streamID, .success(HTTP2Response(status: status, headers: entry.headers, body: entry.body ?? ByteBuffer())))
    }

    /// Without a stream multiplexer, the connection window is ours to return.
    private func returnWindow(_ bytes: Int, context: ChannelHandlerContext) {
        unacknowledgedData += bytes
        guard unacknowledgedData >= Self.windowUpdateThreshold else { return }
        let update = HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedData))
        unacknowledgedData = 0
        context.write(wrapOutboundOut(.frame(update)), promise: nil)
        scheduleFlush(context: context)
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let closed = event as? StreamClosedEvent, let entry = pending[closed.streamID] {
            if closed.reason == nil, entry.status != nil {
                // A clean close: the answer is whole.
                complete(closed.streamID)
                context.fireUserInboundEventTriggered(event)
                return
            }
            // Closed without a complete answer (reset, or dropped by GOAWAY).
            let unprocessed = entry.status == nil && (!entry.headersWritten || closed.reason == .refusedStream)
            finish(closed.streamID, .failure(unprocessed ? TransportFailure.notProcessed : TransportFailure.connectionClosed))
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        pingTask?.cancel()
        pongDeadline?.cancel()
        deadlineTimer?.cancel()
        for (id, entry) in pending {
            finish(id, .failure(entry.headersWritten ? TransportFailure.connectionClosed : TransportFailure.notProcessed))
        }
        events.closed()
        context.fireChannelInactive()
    }

    package func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            // One stream failed; the connection carries on.
            finish(streamError.streamID, .failure(TransportFailure.connectionClosed))
            return
        }
        context.close(promise: nil)
    }

    // MARK: Deadlines

    private func armDeadlineTimer() {
        guard let context, let head = deadlineOrder.first else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadlineTimer = context.eventLoop.scheduleTask(deadline: head.1) {
            let handler = loopBound.value
            handler.deadlineTimer = nil
            handler.expireDeadlines()
        }
    }

    private func expireDeadlines() {
        let now = NIODeadline.now()
        while let (id, deadline) = deadlineOrder.first, deadline <= now || pending[id] == nil {
            deadlineOrder.removeFirst()
            guard pending[id] != nil else { continue }
            finish(id, .failure(TransportFailure.deadlineExceeded))
            if let context {
                context.write(wrapOutboundOut(.frame(HTTP2Frame(streamID: id, payload: .rstStream(.cancel)))), promise: nil)
                scheduleFlush(context: context)
            }
        }
        armDeadlineTimer()
    }

    // MARK: Health

    private func retireForStreamIDs(context: ChannelHandlerContext) {
        goAwayLastStreamID = nextStreamID
        events.retired()
        // Streams already open finish; the pool closes the connection once they have.
    }

    /// No PING ACK: the connection is dead. Its requests fail now (a TLS close to a silent peer
    /// waits out its shutdown timeout first), and the pool stops using it at once.
    private func abandon(context: ChannelHandlerContext) {
        events.retired()
        for (id, entry) in pending {
            finish(id, .failure(entry.headersWritten ? TransportFailure.connectionClosed : TransportFailure.notProcessed))
        }
        context.close(promise: nil)
    }

    /// PING when the connection has been quiet for `pingInterval`; close it when no ACK comes
    /// within `pingTimeout`, so a half-dead connection never holds requests.
    private func schedulePing(context: ChannelHandlerContext) {
        guard pingTask == nil else { return }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        pingTask = context.eventLoop.scheduleTask(in: pingInterval) {
            let (handler, context) = loopBound.value
            handler.pingTask = nil
            handler.pingIfIdle(context: context)
        }
    }

    private func pingIfIdle(context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        if NIODeadline.now() - lastActivity >= pingInterval, pongDeadline == nil {
            let ping = HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: 0x4845_5241), ack: false))
            context.writeAndFlush(wrapOutboundOut(.frame(ping)), promise: nil)
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            pongDeadline = context.eventLoop.scheduleTask(in: pingTimeout) {
                let (handler, context) = loopBound.value
                handler.abandon(context: context)
            }
        }
        schedulePing(context: context)
    }
}

/// A connected, negotiated connection: its channel and the handler that carries requests.
package struct HTTP2ConnectionHandle: Sendable {
    let channel: Channel
    let handler: NIOLoopBound<HTTP2ConnectionHandler>

    /// Sends a request on this connection; the promise gets the answer or a transport failure.
    func send(_ request: HTTP2Request, deadline: NIODeadline, promise: EventLoopPromise<HTTP2Response>) {
        let handler = self.handler
        if channel.eventLoop.inEventLoop {
            handler.value.send(request, deadline: deadline, promise: promise)
        } else {
            channel.eventLoop.execute { handler.value.send(request, deadline: deadline, promise: promise) }
        }
    }

    /// Sends several requests on this connection in one hop to its event loop and one flush.
    func send(_ batch: [(HTTP2Request, EventLoopPromise<HTTP2Response>)], deadline: NIODeadline) {
        let handler = self.handler
        if channel.eventLoop.inEventLoop {
            handler.value.send(batch, deadline: deadline)
        } else {
            channel.eventLoop.execute { handler.value.send(batch, deadline: deadline) }
        }
    }
}

/// How connections to one push service host are made.
package struct HTTP2ConnectionFactory: Sendable {
    let host: String
    let port: Int
    let authority: String
    let sslContext: NIOSSLContext
    let connectTimeout: TimeAmount
    let pingInterval: TimeAmount
    let pingTimeout: TimeAmount
    let lastUsableStreamID: Int32
    /// Where to connect, when the caller resolves and checks the host itself (Web Push's SSRF
    /// guard); nil connects by host name.
    let addresses: (@Sendable () async throws -> [SocketAddress])?
    /// The peer is anyone's (a Web Push service a registration named): NIO's flood guard and
    /// header validation stay on. APNs and FCM, authenticated by TLS, get them relaxed.
    let peerIsUntrusted: Bool

    /// A factory for a host whose addresses `addresses` gives, with a TLS context the caller made
    /// (it must offer ALPN `h2`): a host the caller does not trust, as Web Push's are.
    package init(
        host: String, port: Int, authority: String, sslContext: NIOSSLContext, connectTimeout: Duration, pingInterval: Duration,
        pingTimeout: Duration, addresses: @escaping @Sendable () async throws -> [SocketAddress]
    ) {
        self.host = host
        self.port = port
        self.authority = authority
        self.sslContext = sslContext
        self.connectTimeout = TimeAmount(connectTimeout)
        self.pingInterval = TimeAmount(pingInterval)
        self.pingTimeout = TimeAmount(pingTimeout)
        self.lastUsableStreamID = HTTP2ConnectionHandler.lastUsableStreamID
        self.addresses = addresses
        self.peerIsUntrusted = true
    }

    package init(
        url: URL, trustRootsPEMFile: String?, trustRootsPEM: [String] = [], offersALPN: Bool = true, connectTimeout: Duration,
        pingInterval: Duration, pingTimeout: Duration, lastUsableStreamID: Int32 = HTTP2ConnectionHandler.lastUsableStreamID
    ) throws {
        self.lastUsableStreamID = lastUsableStreamID
        self.addresses = nil
        self.peerIsUntrusted = false
        guard let host = url.host, !host.isEmpty else {
            throw HeraldConfigurationError(field: "url", message: "no host in \(url)")
        }
        self.host = host
        self.port = url.port ?? 443
        self.authority = port == 443 ? host : "\(host):\(port)"
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = offersALPN ? ["h2"] : []
        // A dead peer never answers close_notify; do not hold a closing connection for long.
        tls.shutdownTimeout = .seconds(1)
        tls.additionalTrustRoots = try Self.trustRoots(files: trustRootsPEMFile.map { [$0] } ?? [], pem: trustRootsPEM)
        self.sslContext = try NIOSSLContext(configuration: tls)
        self.connectTimeout = TimeAmount(connectTimeout)
        self.pingInterval = TimeAmount(pingInterval)
        self.pingTimeout = TimeAmount(pingTimeout)
    }

    /// Trust roots beside the system's: PEM files an operator names, and PEM text held in memory
    /// (a built-in simulator's CA, so nothing is written to disk for it).
    package static func trustRoots(files: [String], pem: [String]) throws -> [NIOSSLAdditionalTrustRoots] {
        try files.map { .file($0) } + pem.map { .certificates(try NIOSSLCertificate.fromPEMBytes(Array($0.utf8))) }
    }

    /// A host that is an IP literal gets no SNI; NIOSSL then matches the certificate's IP SAN.
    private var serverNameForSNI: String? {
        IPAddressLiteral.bytes(host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))) == nil ? host : nil
    }

    /// Connects, negotiates TLS and HTTP/2, and returns the channel and its multiplexer.
    func connect(
        on eventLoop: EventLoop, events: HTTP2ConnectionEvents
    ) -> EventLoopFuture<HTTP2ConnectionHandle> {
        let sslContext = self.sslContext
        let sni = serverNameForSNI
        let pingInterval = self.pingInterval
        let pingTimeout = self.pingTimeout
        let authority = self.authority
        let lastUsableStreamID = self.lastUsableStreamID
        let connectTimeout = self.connectTimeout
        let untrusted = peerIsUntrusted
        @Sendable func bootstrap() -> ClientBootstrap {
            ClientBootstrap(group: eventLoop)
                .connectTimeout(connectTimeout)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let sync = channel.pipeline.syncOperations
                        try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: sni))
                        let flushes = SocketFlushCoalescer()
                        try sync.addHandler(flushes)
                        if untrusted {
                            // Anyone's server: NIOHTTP2, with its flood guard and header validation.
                            var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                            configuration.initialSettings = [
                                HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
                                HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
                                HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),
                            ]
                            var streams = NIOHTTP2Handler.StreamConfiguration()
                            streams.targetWindowSize = 1 << 20
                            try sync.addHandler(
                                NIOHTTP2Handler(mode: .client, connectionConfiguration: configuration, streamConfiguration: streams))
                            try sync.addHandler(ClientWritesAsFrames())
                        } else {
                            // APNs or FCM, authenticated by TLS: HTTP/2's framing kept to what a client
                            // that opens every stream needs (APNs changes SETTINGS after every rejection,
                            // which NIOHTTP2's flood guard would take for an attack).
                            try sync.addHandler(HTTP2ClientFramer())
                        }
                        try sync.addHandler(
                            HTTP2ConnectionHandler(
                                events: events, flushes: flushes, authority: authority, pingInterval: pingInterval, pingTimeout: pingTimeout,
                                lastUsableStreamID: lastUsableStreamID))
                    }
                }
        }
        let connected: EventLoopFuture<any Channel>
        if let addresses {
            // The first checked address that answers.
            connected = eventLoop.makeFutureWithTask { () -> any Channel in
                var failure: any Error = TransportFailure.connectFailed("no address")
                for address in try await addresses() {
                    do { return try await bootstrap().connect(to: address).get() } catch { failure = error }
                }
                throw failure
            }
        } else {
            connected = bootstrap().connect(host: host, port: port)
        }
        return connected
            .flatMap { channel in
                channel.pipeline.handler(type: HTTP2ConnectionHandler.self).map { handler in
                    HTTP2ConnectionHandle(channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
                }
            }
    }
}

