import Foundation
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// What a connection reports to its pool. Called on the connection's event loop.
struct APNsConnectionEvents: Sendable {
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS changed (the first call means "ready").
    var maxConcurrentStreamsChanged: @Sendable (Int) -> Void
    /// The server sent GOAWAY: no new streams on this connection.
    var goAwayReceived: @Sendable () -> Void
    /// The connection closed.
    var closed: @Sendable () -> Void
}

/// Watches the connection-level frames: SETTINGS (the live stream limit), GOAWAY, PING.
final class APNsConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// What HTTP/2 assumes when a server's SETTINGS names no limit: unlimited; we cap it.
    static let defaultMaxConcurrentStreams = 1_000

    private let events: APNsConnectionEvents
    private let pingInterval: TimeAmount
    private let pingTimeout: TimeAmount
    private var sawSettings = false
    private var pingTask: Scheduled<Void>?
    private var pongDeadline: Scheduled<Void>?
    private var lastActivity = NIODeadline.now()

    init(events: APNsConnectionEvents, pingInterval: TimeAmount, pingTimeout: TimeAmount) {
        self.events = events
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
    }

    func channelActive(context: ChannelHandlerContext) {
        schedulePing(context: context)
        context.fireChannelActive()
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { schedulePing(context: context) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        lastActivity = .now()
        switch frame.payload {
        case .settings(.settings(let settings)):
            var limit: Int? = sawSettings ? nil : Self.defaultMaxConcurrentStreams
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                limit = min(setting.value, Self.defaultMaxConcurrentStreams)
            }
            sawSettings = true
            if let limit { events.maxConcurrentStreamsChanged(limit) }
        case .goAway:
            events.goAwayReceived()
        case .ping(_, ack: true):
            pongDeadline?.cancel()
            pongDeadline = nil
        default:
            break
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        pingTask?.cancel()
        pongDeadline?.cancel()
        events.closed()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Connection-level errors end the connection; streams learn through their own channels.
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
            context.writeAndFlush(wrapOutboundOut(ping), promise: nil)
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            pongDeadline = context.eventLoop.scheduleTask(in: pingTimeout) {
                loopBound.value.close(promise: nil)
            }
        }
        schedulePing(context: context)
    }
}

/// One request's answer, completed at most once by whichever comes first: the stream's
/// answer, its deadline, or the failure to open the stream at all. Confined to the event loop.
final class APNsResponseSlot {
    private let promise: EventLoopPromise<APNsHTTPResponse>
    private(set) var done = false

    init(promise: EventLoopPromise<APNsHTTPResponse>) { self.promise = promise }

    func complete(_ result: Result<APNsHTTPResponse, any Error>) {
        guard !done else { return }
        done = true
        promise.completeWith(result)
    }
}

/// Carries one request on one stream and completes its slot exactly once.
final class APNsStreamHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let request: APNsHTTPRequest
    private let authority: String
    private let slot: APNsResponseSlot
    private let deadline: NIODeadline
    private var status: Int?
    private var responseHeaders = HPACKHeaders()
    private var body: ByteBuffer?
    private var requestStarted = false
    /// True once the HEADERS frame reached the connection: only then may APNs have seen the request.
    private var headersWritten = false
    private var timeout: Scheduled<Void>?

    init(request: APNsHTTPRequest, authority: String, deadline: NIODeadline, slot: APNsResponseSlot) {
        self.request = request
        self.authority = authority
        self.deadline = deadline
        self.slot = slot
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timeout = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.finish(.failure(APNsTransportFailure.deadlineExceeded))
            context.close(promise: nil)
        }
        if context.channel.isActive { sendRequest(context: context) }
    }


    func channelActive(context: ChannelHandlerContext) {
        sendRequest(context: context)
        context.fireChannelActive()
    }

    private func sendRequest(context: ChannelHandlerContext) {
        guard !requestStarted else { return }
        requestStarted = true
        var headers = HPACKHeaders()
        headers.reserveCapacity(request.headers.count + 4)
        headers.add(name: ":method", value: request.method)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":path", value: request.path, indexing: .nonIndexable)
        headers.add(name: ":authority", value: authority)
        headers.add(contentsOf: request.headers)
        let hasBody = request.body.readableBytes > 0
        let headersPromise = context.eventLoop.makePromise(of: Void.self)
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        headersPromise.futureResult.whenSuccess { loopBound.value.headersWritten = true }
        context.write(wrapOutboundOut(.headers(.init(headers: headers, endStream: !hasBody))), promise: headersPromise)
        if hasBody {
            context.write(wrapOutboundOut(.data(.init(data: .byteBuffer(request.body), endStream: true))), promise: nil)
        }
        context.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let payload):
            if status == nil {
                guard let value = payload.headers.first(name: ":status"), let code = Int(value) else {
                    finish(.failure(APNsTransportFailure.protocolError("response without :status")))
                    context.close(promise: nil)
                    return
                }
                if code >= 100, code < 200 { return }  // informational; the real answer follows
                status = code
                responseHeaders = payload.headers
            }
            if payload.endStream { complete() }
        case .data(let payload):
            if case .byteBuffer(var buffer) = payload.data {
                if body == nil { body = buffer } else { body!.writeBuffer(&buffer) }
            }
            if payload.endStream { complete() }
        default:
            break
        }
    }

    private func complete() {
        guard let status else {
            finish(.failure(APNsTransportFailure.protocolError("stream ended without headers")))
            return
        }
        finish(.success(APNsHTTPResponse(status: status, headers: responseHeaders, body: body ?? ByteBuffer())))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !headersWritten {
            finish(.failure(APNsTransportFailure.notProcessed))
        } else if status == nil, let closed = error as? NIOHTTP2Errors.StreamClosed,
            closed.errorCode == .refusedStream || closed.errorCode == .cancel
        {
            // Dropped by GOAWAY past its last stream id, or refused: APNs never processed it.
            finish(.failure(APNsTransportFailure.notProcessed))
        } else {
            finish(.failure(APNsTransportFailure.connectionClosed))
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(headersWritten ? APNsTransportFailure.connectionClosed : APNsTransportFailure.notProcessed))
        context.fireChannelInactive()
    }

    private func finish(_ result: Result<APNsHTTPResponse, any Error>) {
        timeout?.cancel()
        slot.complete(result)
    }
}

/// How connections to one APNs host are made.
struct APNsConnectionFactory: Sendable {
    let host: String
    let port: Int
    let authority: String
    let sslContext: NIOSSLContext
    let connectTimeout: TimeAmount
    let pingInterval: TimeAmount
    let pingTimeout: TimeAmount

    init(url: URL, trustRootsPEMFile: String?, connectTimeout: Duration, pingInterval: Duration, pingTimeout: Duration) throws {
        guard let host = url.host, !host.isEmpty else {
            throw APNsConfigurationError(field: "HERALD_APNS_URL", message: "no host in \(url)")
        }
        self.host = host
        self.port = url.port ?? 443
        self.authority = port == 443 ? host : "\(host):\(port)"
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let trustRootsPEMFile {
            tls.additionalTrustRoots = [.file(trustRootsPEMFile)]
        }
        self.sslContext = try NIOSSLContext(configuration: tls)
        self.connectTimeout = .nanoseconds(Int64(connectTimeout.seconds * 1e9))
        self.pingInterval = .nanoseconds(Int64(pingInterval.seconds * 1e9))
        self.pingTimeout = .nanoseconds(Int64(pingTimeout.seconds * 1e9))
    }

    /// A host that is an IP literal gets no SNI; NIOSSL then matches the certificate's IP SAN.
    private var serverNameForSNI: String? {
        var v4 = in_addr()
        var v6 = in6_addr()
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1 { return nil }
        return host
    }

    /// Connects, negotiates TLS and HTTP/2, and returns the channel and its multiplexer.
    func connect(
        on eventLoop: EventLoop, events: APNsConnectionEvents
    ) -> EventLoopFuture<(Channel, NIOHTTP2Handler.StreamMultiplexer)> {
        let sslContext = self.sslContext
        let sni = serverNameForSNI
        let pingInterval = self.pingInterval
        let pingTimeout = self.pingTimeout
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(connectTimeout)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: sni))
                    var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                    // APNs changes SETTINGS after every rejection; NIO's default flood guard would
                    // take that for an attack and close the connection.
                    configuration.controlFrameRateLimit.maximumCount = Int.max / 2
                    configuration.initialSettings = [
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
                        HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
                        HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),
                    ]
                    var streams = NIOHTTP2Handler.StreamConfiguration()
                    streams.targetWindowSize = 1 << 20
                    let multiplexer = try sync.configureHTTP2Pipeline(
                        mode: .client, connectionConfiguration: configuration, streamConfiguration: streams
                    ) { $0.eventLoop.makeSucceededVoidFuture() }
                    try sync.addHandler(
                        APNsConnectionHandler(events: events, pingInterval: pingInterval, pingTimeout: pingTimeout))
                    _ = multiplexer
                }
            }
            .connect(host: host, port: port)
            .flatMap { channel in
                channel.pipeline.handler(type: NIOHTTP2Handler.self).flatMapThrowing { handler in
                    (channel, try handler.syncMultiplexer())
                }
            }
    }
}

/// A configuration value Herald cannot use.
public struct APNsConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public var field: String
    public var message: String
    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }
    public var description: String { "\(field): \(message)" }
}
