import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

@testable import HeraldServer

/// Stands in for the socket's half-close, which `EmbeddedChannel` would take as a full close:
/// records that the output was shut and keeps the channel open for what the client still sends.
final class OutputShutRecorder: ChannelOutboundHandler {
    typealias OutboundIn = NIOAny
    var outputShut = false

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .output else { return context.close(mode: mode, promise: promise) }
        outputShut = true
        promise?.succeed(())
    }
}

/// Which answers close their connection (only one given before its own request's body ended),
/// and the bounds on the staged close and on a request's arrival, on the embedded loop's clock.
@Suite("Connection guard: answers given early")
struct ConnectionGuardTests {
    static let limits = ConnectionLimits(maximumConnections: 10, requestTimeout: .seconds(2))

    func connection(_ recorder: OutputShutRecorder = OutputShutRecorder()) throws -> EmbeddedChannel {
        let table = ConnectionTable(limits: Self.limits)
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandlers(recorder, table.handler())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    /// A body byte every 100 ms on the embedded loop's clock, for `duration`.
    func trickle(_ channel: EmbeddedChannel, for duration: TimeAmount) throws {
        for _ in 0..<(duration.nanoseconds / TimeAmount.milliseconds(100).nanoseconds) {
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(100))
            try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: " ")))
        }
    }

    /// A request whose body has not ended, answered 401: what stays of the connection.
    func answeredEarly(_ recorder: OutputShutRecorder) throws -> EmbeddedChannel {
        let channel = try connection(recorder)
        try channel.writeInbound(request())
        _ = try channel.readInbound(as: HTTPRequestPart.self)
        _ = try answer(channel, .unauthorized)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        _ = try channel.readOutbound(as: HTTPResponsePart.self)
        return channel
    }

    func request() -> HTTPRequestPart { .head(HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/v1/events")) }

    /// The head of the answer written now, as it leaves the guard.
    func answer(_ channel: EmbeddedChannel, _ status: HTTPResponse.Status) throws -> HTTPResponse? {
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: status)))
        guard case .head(let head) = try channel.readOutbound(as: HTTPResponsePart.self) else { return nil }
        return head
    }

    @Test("an answer before its request's body ended says Connection: close, and what the client sends after it goes no further")
    func earlyAnswer() throws {
        let channel = try connection()
        try channel.writeInbound(request())
        #expect(try channel.readInbound(as: HTTPRequestPart.self) != nil)
        #expect(try answer(channel, .unauthorized)?.headerFields[.connection] == "close")
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        _ = try channel.readOutbound(as: HTTPResponsePart.self)
        // The rest of the body, and a next request: read and dropped.
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "{}")))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        try channel.writeInbound(request())
        #expect(try channel.readInbound(as: HTTPRequestPart.self) == nil)
        _ = try? channel.finish()
    }

    @Test("a pipelined request still arriving does not close the connection on the answer to the one before it")
    func pipelinedAnswerKeepsConnection() throws {
        let channel = try connection()
        // The first request whole, the second's head only.
        try channel.writeInbound(request())
        try channel.writeInbound(HTTPRequestPart.end(nil))
        try channel.writeInbound(request())
        for _ in 0..<3 { _ = try channel.readInbound(as: HTTPRequestPart.self) }
        #expect(try answer(channel, .ok)?.headerFields[.connection] == nil)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        _ = try channel.readOutbound(as: HTTPResponsePart.self)
        // The second is answered before its body ends: that answer closes.
        #expect(try answer(channel, .contentTooLarge)?.headerFields[.connection] == "close")
        _ = try? channel.finish()
    }

    @Test("an answer to a request read whole keeps the connection open")
    func wholeRequestKeepsConnection() throws {
        let channel = try connection()
        try channel.writeInbound(request())
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "{}")))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(try answer(channel, .badRequest)?.headerFields[.connection] == nil)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        _ = try channel.readOutbound(as: HTTPResponsePart.self)
        try channel.writeInbound(request())
        #expect(try channel.readInbound(as: HTTPRequestPart.self) != nil)
        _ = try? channel.finish()
    }

    @Test("after an early answer the output shuts at once, and the input within 2 s however the client trickles")
    func lingerTimeout() throws {
        let recorder = OutputShutRecorder()
        let channel = try answeredEarly(recorder)
        #expect(recorder.outputShut && channel.isActive)
        try trickle(channel, for: .milliseconds(1_900))
        #expect(channel.isActive)
        // docs/security.md's 2 s.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(100))
        #expect(!channel.isActive)
    }

    @Test("after an early answer the input closes once 1 MiB more has arrived")
    func lingerBytes() throws {
        let channel = try answeredEarly(OutputShutRecorder())
        let chunk = ByteBuffer(repeating: 0x20, count: 64 << 10)
        // docs/security.md's 1 MiB.
        for _ in 0..<((1 << 20) / chunk.readableBytes) { try channel.writeInbound(HTTPRequestPart.body(chunk)) }
        #expect(channel.isActive)
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: " ")))
        #expect(!channel.isActive)
    }

    @Test("a request must arrive whole within requestTimeout: bytes trickled in do not reset it")
    func requestTimeout() throws {
        let channel = try connection()
        try channel.writeInbound(request())
        try trickle(channel, for: .milliseconds(1_900))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(100))
        #expect(!channel.isActive)
    }

    /// A request read whole and answered `after` later.
    func exchange(_ channel: EmbeddedChannel, answeredAfter: TimeAmount = .milliseconds(5)) throws {
        try channel.writeInbound(request())
        try channel.writeInbound(HTTPRequestPart.end(nil))
        _ = try channel.readInbound(as: HTTPRequestPart.self)
        _ = try channel.readInbound(as: HTTPRequestPart.self)
        channel.embeddedEventLoop.advanceTime(by: answeredAfter)
        _ = try answer(channel, .accepted)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        _ = try channel.readOutbound(as: HTTPResponsePart.self)
    }

    @Test("a keep-alive connection closes idleTimeout + requestTimeout after its last answer, however many came before")
    func idleAfterLastAnswer() throws {
        let channel = try connection()
        // 1,000 requests 10 ms apart: 10 s, past the first request's 2 s and the timer it set.
        for _ in 0..<1_000 {
            try exchange(channel)
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(5))
        }
        // The last answer was 5 ms ago; 30 s idle plus 2 s for the next request from it.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(31_990))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(5))
        #expect(!channel.isActive)
    }

    @Test("a request not answered within answerTimeout closes its connection, at that moment")
    func answerTimeout() throws {
        let channel = try connection()
        try exchange(channel)
        // The next request's end at 1 s; its answer never comes.
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        try channel.writeInbound(request())
        try channel.writeInbound(HTTPRequestPart.end(nil))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(59_999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    @Test("on a keep-alive connection, an early answer's 2 s linger still ends it 2 s later, before the idle deadline")
    func lingerAfterIdle() throws {
        let channel = try connection()
        try exchange(channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        try channel.writeInbound(request())
        _ = try channel.readInbound(as: HTTPRequestPart.self)
        _ = try answer(channel, .unauthorized)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        _ = try channel.readOutbound(as: HTTPResponsePart.self)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1_999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }
}
