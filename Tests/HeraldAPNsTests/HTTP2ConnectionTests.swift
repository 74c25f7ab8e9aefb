@testable import HeraldHTTP2
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Testing

/// The HTTP/2 connection handler APNs and FCM share, fed frames as a server would send them.
@Suite struct HTTP2ConnectionTests {
    static func connection() throws -> (EmbeddedChannel, HTTP2ConnectionHandler) {
        let flushes = SocketFlushCoalescer()
        let handler = HTTP2ConnectionHandler(
            events: HTTP2ConnectionEvents(maxConcurrentStreamsChanged: { _ in }, retired: {}, closed: {}), flushes: flushes,
            authority: "push.example", pingInterval: .seconds(60), pingTimeout: .seconds(10))
        let channel = EmbeddedChannel(handlers: [flushes, handler])
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
        while let write = try channel.readOutbound(as: HTTP2ClientWrite.self) {
            if case .frame(let frame) = write, case .rstStream(.cancel) = frame.payload, frame.streamID == stream { reset = true }
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
        let flushes = SocketFlushCoalescer()
        let handler = HTTP2ConnectionHandler(
            events: HTTP2ConnectionEvents(
                maxConcurrentStreamsChanged: { limit in
                    guard limit == 1_000, let handler = burst.handler, let channel = burst.channel else { return }
                    for _ in 0..<streams { _ = Self.send(on: channel, handler) }
                    while let write = try? channel.readOutbound(as: HTTP2ClientWrite.self) {
                        if case .request = write { burst.flushedInsideRead += 1 }
                    }
                }, retired: {}, closed: {}),
            flushes: flushes, authority: "push.example", pingInterval: .seconds(60), pingTimeout: .seconds(10))
        let channel = EmbeddedChannel(handlers: [flushes, handler])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        burst.handler = handler
        burst.channel = channel
        let settings = HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: 1_000)])))
        channel.pipeline.fireChannelRead(NIOAny(settings))
        // Before the read ends, all but the last slice are on the wire (most of the burst).
        #expect(burst.flushedInsideRead >= streams - SocketFlushCoalescer.flushesPerWrite)
        #expect(burst.flushedInsideRead >= streams * 2 / 3)
        #expect(burst.flushedInsideRead < streams)
        channel.pipeline.fireChannelReadComplete()
        var rest = 0
        while let write = try channel.readOutbound(as: HTTP2ClientWrite.self) {
            if case .request = write { rest += 1 }
        }
        #expect(burst.flushedInsideRead + rest == streams)
    }

    @Test("each stream's DATA follows its HEADERS on the wire, also when the streams opened in one turn share a write")
    func framesInStreamOrder() throws {
        // NIOHTTP2 between the two, as on a real connection: it releases DATA it holds for
        // several streams in no particular order, and a server past GOAWAY may stop reading at
        // DATA for a stream it refused, stranding earlier streams' DATA behind it.
        let flushes = SocketFlushCoalescer()
        let handler = HTTP2ConnectionHandler(
            events: HTTP2ConnectionEvents(maxConcurrentStreamsChanged: { _ in }, retired: {}, closed: {}), flushes: flushes,
            authority: "push.example", pingInterval: .seconds(60), pingTimeout: .seconds(10))
        let channel = EmbeddedChannel(handlers: [flushes, NIOHTTP2Handler(mode: .client), ClientWritesAsFrames(), handler])
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        try channel.writeInbound(ByteBuffer(bytes: [0, 0, 0, 4, 0, 0, 0, 0, 0]))  // the server's SETTINGS
        channel.pipeline.fireChannelReadComplete()
        _ = Self.streamFrames(channel)

        // A stream alone on its connection goes at once.
        let first = Self.send(on: channel, handler)
        #expect(Self.streamFrames(channel) == [Frame(type: 1, stream: 1), Frame(type: 0, stream: 1)])
        // Beside it, a batch waits for the loop's turn to end and then goes out in one write.
        let batch = (0..<40).map { _ in
            (HTTP2Request(path: "/send", headers: HPACKHeaders(), body: ByteBuffer(string: "{}")), channel.eventLoop.makePromise(of: HTTP2Response.self))
        }
        handler.send(batch, deadline: .now() + .seconds(10))
        #expect(Self.streamFrames(channel).isEmpty)
        channel.embeddedEventLoop.run()
        // HEADERS (type 1) and DATA (type 0) of stream 3, then of 5, and so on.
        var expected: [Frame] = []
        for stream in stride(from: UInt32(3), through: 81, by: 2) {
            expected += [Frame(type: 1, stream: stream), Frame(type: 0, stream: stream)]
        }
        #expect(Self.streamFrames(channel) == expected)
        _ = first
        _ = try? channel.finish()  // fails the requests still open
    }

    struct Frame: Equatable {
        var type: UInt8
        var stream: UInt32
    }

    /// The type and stream of each frame on a stream other than 0 written so far, read from the
    /// bytes on the wire (the client preface skipped).
    static func streamFrames(_ channel: EmbeddedChannel) -> [Frame] {
        var bytes = ByteBuffer()
        while case .byteBuffer(var buffer)? = try? channel.readOutbound(as: IOData.self) { bytes.writeBuffer(&buffer) }
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        if bytes.readableBytesView.starts(with: preface) { bytes.moveReaderIndex(forwardBy: preface.count) }
        var frames: [Frame] = []
        while let frame = WireFrame.read(from: &bytes) {
            if frame.stream != 0 { frames.append(Frame(type: frame.type, stream: frame.stream)) }
        }
        return frames
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
