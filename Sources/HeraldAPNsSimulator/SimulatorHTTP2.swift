import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldPushCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// Per-connection state, confined to the connection's event loop (its streams share it).
final class SimulatorConnection {
    let state: SimulatorState
    let channel: Channel
    var context: SimulatorRequestCheck.ConnectionContext
    /// What the server last advertised as SETTINGS_MAX_CONCURRENT_STREAMS.
    var advertisedLimit = 1
    var streamsStarted = 0
    var activeStreams = 0
    var goingAway = false
    /// Set by a `stall` fault: the socket handler drops everything that arrives.
    var stalled = false
    var lastStreamID = HTTP2StreamID.maxID
    var highestStreamID = HTTP2StreamID(0)
    /// The handler at the socket end of the pipeline: closing there skips TLS's orderly close.
    var rawContext: ChannelHandlerContext?

    /// The host this connection reached: Apple's production or sandbox one.
    let environment: APNsEnvironment

    init(state: SimulatorState, channel: Channel, environment: APNsEnvironment) {
        self.state = state
        self.channel = channel
        self.environment = environment
        self.context = .init(tokenUpdateInterval: Int64(state.configuration.tokenUpdateInterval.seconds))
    }

    /// Advertises a new stream limit when it changes, as APNs does.
    func advertise(limit: Int) {
        guard limit != advertisedLimit, !goingAway else { return }
        advertisedLimit = limit
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: limit)])))
        // The answer that follows flushes it: one TLS record for both.
        channel.write(frame, promise: nil)
    }

    /// Counts a new stream and fires a connection fault when one is due.
    func streamOpened(_ streamID: HTTP2StreamID) {
        highestStreamID = max(highestStreamID, streamID)
        streamsStarted += 1
        activeStreams += 1
        state.streamStarted()
        switch state.connectionFault(streams: streamsStarted) {
        case .goaway:
            // Not from inside NIOHTTP2's frame loop: a GOAWAY written re-entrantly there kept
            // later-arriving DATA of earlier streams from their handlers. The next turn names
            // the highest stream opened by then, so every stream it covers is answered.
            let loopBound = NIOLoopBound(self, eventLoop: channel.eventLoop)
            channel.eventLoop.execute {
                let connection = loopBound.value
                connection.goingAway = true
                connection.lastStreamID = connection.highestStreamID
                let frame = HTTP2Frame(
                    streamID: .rootStream,
                    payload: .goAway(lastStreamID: connection.highestStreamID, errorCode: .noError, opaqueData: nil))
                connection.channel.writeAndFlush(frame, promise: nil)
                connection.closeIfDrained()
            }
        case .reset:
            resetConnection()
        case .stall:
            stalled = true
        default:
            break
        }
    }

    func streamClosed() {
        activeStreams -= 1
        closeIfDrained()
    }

    /// After GOAWAY, closes the connection once its last stream is answered.
    func closeIfDrained() {
        guard goingAway, activeStreams == 0 else { return }
        // Close only once every answer has reached the socket: writes complete in order, so
        // a final GOAWAY's completion says the earlier answers went out.
        let final = HTTP2Frame(
            streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: nil))
        let channel = self.channel
        channel.writeAndFlush(final).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Ends the TCP connection with RST and no TLS close_notify, like a dropped connection.
    func resetConnection() {
        guard let rawContext else { return channel.close(promise: nil) }
        if let socket = channel as? SocketOptionProvider {
            _ = socket.setSoLinger(linger(l_onoff: 1, l_linger: 0))
        }
        rawContext.close(promise: nil)
    }
}

/// Sits first in the pipeline so a reset can close the socket under TLS.
final class SimulatorSocketHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    let connection: SimulatorConnection

    init(connection: SimulatorConnection) { self.connection = connection }

    func handlerAdded(context: ChannelHandlerContext) {
        connection.rawContext = context
    }

    func channelActive(context: ChannelHandlerContext) {
        connection.state.connectionOpened()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !connection.stalled else { return }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.state.connectionClosed()
        connection.rawContext = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Sits after HTTP/2 on a connection that has sent GOAWAY. NIOHTTP2 takes DATA on a stream it
/// refused after its GOAWAY for a connection error and stops reading the frames that arrived
/// with it, so DATA of streams the GOAWAY kept could wait behind it for the client's next write.
/// RFC 9113 §6.8 has such frames ignored, as Apple's servers would: HTTP/2 is handed an empty
/// read on the next turn and reads on.
final class SimulatorGoAwayReader: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    private let connection: SimulatorConnection

    init(connection: SimulatorConnection) { self.connection = connection }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard connection.goingAway, error is NIOHTTP2Errors.NoSuchStream,
            let tls = try? context.pipeline.syncOperations.context(handlerType: NIOSSLServerHandler.self)
        else {
            context.fireErrorCaught(error)
            return
        }
        let loopBound = NIOLoopBound(tls, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let tls = loopBound.value
            guard tls.channel.isActive else { return }
            tls.fireChannelRead(NIOAny(tls.channel.allocator.buffer(capacity: 0)))
            tls.fireChannelReadComplete()
        }
    }
}

/// Answers one APNs request.
final class SimulatorStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let connection: SimulatorConnection
    private var headers = HPACKHeaders()
    private var body: ByteBuffer?
    private var counted = false
    private var answered = false

    init(connection: SimulatorConnection) { self.connection = connection }

    func channelActive(context: ChannelHandlerContext) {
        if let id = try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID) {
            counted = true
            connection.streamOpened(id)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if counted { connection.streamClosed() }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .headers(let payload):
            headers.add(contentsOf: payload.headers)
            if payload.endStream { respond(context: context) }
        case .data(let payload):
            if case .byteBuffer(var buffer) = payload.data {
                if body == nil { body = buffer } else { body!.writeBuffer(&buffer) }
            }
            if payload.endStream { respond(context: context) }
        default:
            break
        }
    }

    private func respond(context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        let state = connection.state
        let request = SimulatorRequest(headers: headers, body: body ?? ByteBuffer())
        var outcome = SimulatorRequestCheck.check(
            request, topics: state.configuration.topics, connection: connection.context, verify: state.verify)
        // A token belongs to one environment: on the other's host Apple answers BadDeviceToken.
        if case .accepted(let accepted) = outcome, let environment = state.environment(of: accepted.token), environment != connection.environment {
            outcome = .rejected(.badDeviceToken)
        }
        var status = 200
        var reason: String?
        var timestampMs: Int64?
        var retryAfter: Int?
        var delayMs: Int?
        var apnsID = headers.first(name: "apns-id") ?? UUID.random().lowercasedString
        switch outcome {
        case .rejected(let r):
            status = r.httpStatus
            reason = r.rawValue
        case .accepted(let accepted):
            if connection.context.boundKeyID == nil { connection.context.boundKeyID = accepted.keyID }
            connection.context.lastToken = (accepted.jwt, accepted.issuedAt)
            apnsID = accepted.apnsID ?? apnsID
            let faults = state.faults(for: accepted.token)
            delayMs = faults.delayMs
            if let fault = faults.response {
                status = fault.status
                reason = fault.reason
                timestampMs = fault.timestampMs
                retryAfter = fault.retryAfter
            } else {
                state.record(RecordedNotification(
                    token: accepted.token, apnsID: apnsID, topic: accepted.topic, pushType: accepted.pushType.rawValue,
                    priority: accepted.priority, expiration: accepted.expiration, collapseID: accepted.collapseID,
                    keyID: accepted.keyID, payload: String(buffer: request.body),
                    receivedAtMs: Int64(state.configuration.now().timeIntervalSince1970 * 1000)))
            }
        }
        if let reason { state.countRejection(reason) }
        // Apple: 1 stream until a valid provider token, 1 after a rejection, the full limit after an acceptance.
        connection.advertise(limit: status == 200 ? state.configuration.authenticatedMaxStreams : 1)
        // A delayed answer does not hold the new limit back: APNs sends SETTINGS when it decides.
        if let delayMs, delayMs > 0 { connection.channel.flush() }

        var responseHeaders = HPACKHeaders()
        responseHeaders.add(name: ":status", value: String(status))
        responseHeaders.add(name: "apns-id", value: apnsID, indexing: .nonIndexable)
        if let retryAfter { responseHeaders.add(name: "retry-after", value: String(retryAfter)) }
        var responseBody: ByteBuffer?
        if let reason {
            var text = #"{"reason":"\#(reason)""#
            if let timestampMs { text += #","timestamp":\#(timestampMs)"# }
            text += "}"
            responseBody = context.channel.allocator.buffer(string: text)
            responseHeaders.add(name: "content-type", value: "application/json")
        }
        let write = { [responseHeaders, responseBody] (context: ChannelHandlerContext) in
            context.write(
                self.wrapOutboundOut(.headers(.init(headers: responseHeaders, endStream: responseBody == nil))), promise: nil)
            if let responseBody {
                context.write(self.wrapOutboundOut(.data(.init(data: .byteBuffer(responseBody), endStream: true))), promise: nil)
            }
            context.flush()
        }
        if let delayMs, delayMs > 0 {
            let loopBound = NIOLoopBound((context, write), eventLoop: context.eventLoop)
            context.eventLoop.scheduleTask(in: .milliseconds(Int64(delayMs))) {
                let (context, write) = loopBound.value
                if context.channel.isActive { write(context) }
            }
        } else {
            write(context)
        }
    }
}
