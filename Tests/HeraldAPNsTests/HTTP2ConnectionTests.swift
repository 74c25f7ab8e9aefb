@testable import HeraldHTTP2
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

/// The HTTP/2 connection handler APNs and FCM share, fed frames as a server would send them.
@Suite struct HTTP2ConnectionTests {
    static func connection() throws -> (EmbeddedChannel, HTTP2ConnectionHandler) {
        let handler = HTTP2ConnectionHandler(
            events: HTTP2ConnectionEvents(maxConcurrentStreamsChanged: { _ in }, retired: {}, closed: {}), authority: "push.example",
            pingInterval: .seconds(60), pingTimeout: .seconds(10))
        let channel = EmbeddedChannel(handler: handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        return (channel, handler)
    }

    static func send(on channel: EmbeddedChannel, _ handler: HTTP2ConnectionHandler) -> EventLoopFuture<HTTP2Response> {
        let promise = channel.eventLoop.makePromise(of: HTTP2Response.self)
        handler.send(
            HTTP2Request(path: "/send", headers: HPACKHeaders(), body: ByteBuffer(string: "{}")), deadline: .now() + .seconds(10), promise: promise)
        return promise.futureResult
    }

    @Test("an answer body past 64 KiB is cut there: the answer is taken and the stream reset, instead of growing memory")
    func oversizedBody() throws {
        let (channel, handler) = try Self.connection()
        let answer = Self.send(on: channel, handler)
        let stream = HTTP2StreamID(1)
        try channel.writeInbound(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: [":status": "400"]))))
        let chunk = ByteBuffer(repeating: UInt8(ascii: "x"), count: 16_384)
        for _ in 0..<(HTTP2ConnectionHandler.maximumResponseBody / 16_384 + 2) {
            try channel.writeInbound(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(chunk)))))
        }
        // Without the limit the request would still be open, its body growing.
        var outcome: Result<HTTP2Response, any Error>?
        answer.whenComplete { outcome = $0 }
        guard case .success(let response)? = outcome else {
            Issue.record("the request is still open or failed: \(String(describing: outcome))")
            return
        }
        #expect(response.status == 400 && response.body.readableBytes == HTTP2ConnectionHandler.maximumResponseBody)
        channel.embeddedEventLoop.run()  // the reset goes out with the turn's flush
        var reset = false
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
            if case .rstStream(.cancel) = frame.payload, frame.streamID == stream { reset = true }
        }
        #expect(reset)
    }

    @Test("streams a raised stream limit lets in during a read go out in slices, not all when the read ends")
    func burstGoesOutInSlices() throws {
        // The events fire inside the SETTINGS frame's read, as the pool's waiters take the new streams.
        final class Burst: @unchecked Sendable {
            var handler: HTTP2ConnectionHandler?
            var channel: EmbeddedChannel?
            var flushedInsideRead = 0
        }
        let burst = Burst()
        let streams = 200
        let handler = HTTP2ConnectionHandler(
            events: HTTP2ConnectionEvents(
                maxConcurrentStreamsChanged: { limit in
                    guard limit == 1_000, let handler = burst.handler, let channel = burst.channel else { return }
                    for _ in 0..<streams { _ = Self.send(on: channel, handler) }
                    while let frame = try? channel.readOutbound(as: HTTP2Frame.self) {
                        if case .headers = frame.payload { burst.flushedInsideRead += 1 }
                    }
                }, retired: {}, closed: {}),
            authority: "push.example", pingInterval: .seconds(60), pingTimeout: .seconds(10))
        let channel = EmbeddedChannel(handler: handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        burst.handler = handler
        burst.channel = channel
        let settings = HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: 1_000)])))
        channel.pipeline.fireChannelRead(NIOAny(settings))
        // Before the read ends, all but the last slice are on the wire (most of the burst).
        #expect(burst.flushedInsideRead >= streams - HTTP2ConnectionHandler.streamsPerFlush)
        #expect(burst.flushedInsideRead >= streams * 2 / 3)
        #expect(burst.flushedInsideRead < streams)
        channel.pipeline.fireChannelReadComplete()
        var rest = 0
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
            if case .headers = frame.payload { rest += 1 }
        }
        #expect(burst.flushedInsideRead + rest == streams)
    }

    @Test("an answer within the limit arrives whole")
    func normalBody() throws {
        let (channel, handler) = try Self.connection()
        let answer = Self.send(on: channel, handler)
        let stream = HTTP2StreamID(1)
        try channel.writeInbound(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: [":status": "200"]))))
        try channel.writeInbound(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(ByteBuffer(string: #"{"name":"m"}"#)), endStream: true))))
        let response = try answer.wait()
        #expect(response.status == 200)
        #expect(String(buffer: response.body) == #"{"name":"m"}"#)
    }
}
