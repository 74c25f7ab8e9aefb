@testable import HeraldHTTP2
import HeraldPushCore
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import NIOPosix
import Testing

/// The HTTP/2 framing APNs and FCM connections use: against NIOHTTP2's server (a peer nobody
/// here wrote, holding the client to RFC 9113) and fed hand-made frames, as a hostile one would.
@Suite struct HTTP2ClientFramerTests {
    // MARK: Against NIOHTTP2's server

    /// Answers each request with `x-body` and `x-header` (the bytes of body and of `x-pad` it got)
    /// and a body of as many bytes as it received.
    final class EchoHandler: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame.FramePayload
        typealias OutboundOut = HTTP2Frame.FramePayload
        var received = 0
        var padLength = 0

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var ended = false
            switch unwrapInboundIn(data) {
            case .headers(let headers):
                padLength = headers.headers.first(name: "x-pad")?.utf8.count ?? 0
                ended = headers.endStream
            case .data(let data):
                received += data.data.readableBytes
                ended = data.endStream
            default:
                break
            }
            guard ended else { return }
            let head: HPACKHeaders = [":status": "200", "x-body": "\(received)", "x-header": "\(padLength)"]
            context.write(wrapOutboundOut(.headers(.init(headers: head))), promise: nil)
            let body = ByteBuffer(repeating: UInt8(ascii: "y"), count: received)
            context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
        }
    }

    /// NIOHTTP2's server with the settings that make a client work hardest: two streams at a time,
    /// a 1,000-byte stream window, a small HPACK table.
    static func server(group: any EventLoopGroup) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    var connection = NIOHTTP2Handler.ConnectionConfiguration()
                    connection.initialSettings = [
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: 2),
                        HTTP2Setting(parameter: .initialWindowSize, value: 1_000),
                        HTTP2Setting(parameter: .headerTableSize, value: 256),
                        HTTP2Setting(parameter: .maxHeaderListSize, value: 65_536),
                    ]
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: connection, streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture { try stream.pipeline.syncOperations.addHandler(EchoHandler()) }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    @Test("against NIOHTTP2's server: streams past its limit of 2 wait, bodies past its 1,000-byte window and a 20 KB header go, every answer whole")
    func interoperatesWithNIOHTTP2() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await Self.server(group: group)
        let client = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let flushes = SocketFlushCoalescer()
                    let handler = HTTP2ConnectionHandler(
                        events: HTTP2ConnectionEvents(maxConcurrentStreamsChanged: { _ in }, retired: {}, closed: {}), flushes: flushes,
                        authority: "127.0.0.1", pingInterval: .seconds(60), pingTimeout: .seconds(10))
                    try channel.pipeline.syncOperations.addHandlers(flushes, HTTP2ClientFramer(), handler)
                }
            }
            .connect(to: server.localAddress!).get()
        let padding = String(repeating: "p", count: 20_000)
        // 20 at once, 40 KB each: 800 KB, past the connection's 65,535-byte window both ways.
        let answers = try await client.eventLoop.submit {
            let handler = try client.pipeline.syncOperations.handler(type: HTTP2ConnectionHandler.self)
            return (0..<20).map { index in
                var headers: HPACKHeaders = ["x-index": "\(index)"]
                if index % 5 == 0 { headers.add(name: "x-pad", value: padding, indexing: .nonIndexable) }
                let body = ByteBuffer(repeating: UInt8(ascii: "x"), count: 40_000 + index)
                let promise = client.eventLoop.makePromise(of: HTTP2Response.self)
                handler.send(HTTP2Request(path: "/echo", headers: headers, body: body), deadline: .now() + .seconds(10), promise: promise)
                return promise.futureResult
            }
        }.get()
        for (index, answer) in answers.enumerated() {
            let response = try await answer.get()
            #expect(response.status == 200)
            #expect(response.headers.first(name: "x-body") == "\(40_000 + index)")
            #expect(response.headers.first(name: "x-header") == (index % 5 == 0 ? "20000" : "0"))
            #expect(response.body.readableBytes == 40_000 + index)
        }
        try await client.close()
        try await server.close()
        try await group.shutdownGracefully()
    }

    // MARK: Frame by frame

    static func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel(handler: HTTP2ClientFramer())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
        return channel
    }

    /// A channel past the handshake: the preface written, the server's SETTINGS (with
    /// `settings`) read, acknowledged and passed on, all of it drained.
    static func connected(settings values: [(UInt16, UInt32)]) throws -> EmbeddedChannel {
        let channel = try channel()
        _ = try written(channel)
        try channel.writeInbound(settings(values))
        _ = try written(channel)
        _ = try channel.readInbound(as: HTTP2Frame.self)
        return channel
    }

    /// Every frame written so far, the client preface skipped.
    static func written(_ channel: EmbeddedChannel) throws -> [(type: UInt8, flags: UInt8, stream: UInt32, payload: ByteBuffer)] {
        var bytes = ByteBuffer()
        while var chunk = try channel.readOutbound(as: ByteBuffer.self) { bytes.writeBuffer(&chunk) }
        if bytes.readableBytesView.starts(with: Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)) { bytes.moveReaderIndex(forwardBy: 24) }
        var frames: [(type: UInt8, flags: UInt8, stream: UInt32, payload: ByteBuffer)] = []
        while let frame = WireFrame.read(from: &bytes) { frames.append(frame) }
        return frames
    }

    static func settings(_ values: [(UInt16, UInt32)]) -> ByteBuffer {
        var payload: [UInt8] = []
        for (id, value) in values {
            payload += [UInt8(id >> 8), UInt8(id & 0xff), UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
        }
        return ByteBuffer(bytes: WireFrame.encode(type: 4, flags: 0, stream: 0, payload))
    }

    static func request(_ channel: EmbeddedChannel, stream: Int, bodyBytes: Int) -> (headers: EventLoopFuture<Void>, data: EventLoopFuture<Void>) {
        let headers: HPACKHeaders = [":method": "POST", ":scheme": "https", ":path": "/", ":authority": "push.example"]
        let head = channel.write(HTTP2ClientWrite.frame(HTTP2Frame(streamID: HTTP2StreamID(stream), payload: .headers(.init(headers: headers)))))
        let body = ByteBuffer(repeating: 0x61, count: bodyBytes)
        let data = channel.write(HTTP2ClientWrite.frame(HTTP2Frame(streamID: HTTP2StreamID(stream), payload: .data(.init(data: .byteBuffer(body), endStream: true)))))
        channel.flush()
        return (head, data)
    }

    @Test("the preface announces no server push; the server's SETTINGS are acknowledged and passed on")
    func prefaceAndSettings() throws {
        let channel = try Self.channel()
        let preface = try Self.written(channel)
        #expect(preface.count == 1 && preface[0].type == 4)
        var announced = preface[0].payload
        var push: UInt32?
        while let id = announced.readInteger(as: UInt16.self), let value = announced.readInteger(as: UInt32.self) {
            if id == 2 { push = value }
        }
        #expect(push == 0)
        try channel.writeInbound(Self.settings([(3, 7)]))
        let frame = try channel.readInbound(as: HTTP2Frame.self)
        guard case .settings(.settings(let settings))? = frame?.payload else {
            Issue.record("no SETTINGS passed on: \(String(describing: frame))")
            return
        }
        #expect(settings.map(\.value) == [7] && settings.first?.parameter == .maxConcurrentStreams)
        let ack = try Self.written(channel)
        #expect(ack.count == 1 && ack[0].type == 4 && ack[0].flags == 1)
    }

    @Test("DATA past the stream's window waits for its WINDOW_UPDATE, in frames no larger than the server's size")
    func streamFlowControl() throws {
        let channel = try Self.connected(settings: [(4, 100)])
        let (_, data) = Self.request(channel, stream: 1, bodyBytes: 1_000)
        var done = false
        data.whenSuccess { done = true }
        let first = try Self.written(channel)
        #expect(first.map(\.type) == [1, 0] && first[1].payload.readableBytes == 100 && first[1].flags & 1 == 0)
        #expect(!done)
        try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 8, flags: 0, stream: 1, [0, 0, 0x03, 0x84])))  // +900
        let rest = try Self.written(channel)
        #expect(rest.map(\.type) == [0] && rest[0].payload.readableBytes == 900 && rest[0].flags & 1 == 1)
        #expect(done)
    }

    @Test("an empty DATA that ends a stream goes even when a lowered SETTINGS made the stream's window negative")
    func negativeStreamWindow() throws {
        let channel = try Self.connected(settings: [(4, 100)])
        let headers: HPACKHeaders = [":method": "POST", ":scheme": "https", ":path": "/", ":authority": "push.example"]
        channel.write(HTTP2ClientWrite.frame(HTTP2Frame(streamID: 1, payload: .headers(.init(headers: headers)))), promise: nil)
        channel.write(HTTP2ClientWrite.frame(HTTP2Frame(streamID: 1, payload: .data(.init(data: .byteBuffer(ByteBuffer(repeating: 0x61, count: 100)))))), promise: nil)
        channel.flush()
        #expect(try Self.written(channel).map(\.type) == [1, 0])
        try channel.writeInbound(Self.settings([(4, 0)]))  // the stream's window: 0 - 100
        _ = try Self.written(channel)
        channel.write(HTTP2ClientWrite.frame(HTTP2Frame(streamID: 1, payload: .data(.init(data: .byteBuffer(ByteBuffer()), endStream: true)))), promise: nil)
        channel.flush()
        let sent = try Self.written(channel)
        #expect(sent.map(\.type) == [0] && sent.map(\.payload.readableBytes) == [0] && sent.first?.flags == 1)
    }

    @Test("DATA past the connection's 65,535-byte window waits for a connection WINDOW_UPDATE; other streams' HEADERS still go")
    func connectionFlowControl() throws {
        let channel = try Self.connected(settings: [(4, 1 << 20), (5, 65_535)])
        _ = Self.request(channel, stream: 1, bodyBytes: 60_000)
        _ = Self.request(channel, stream: 3, bodyBytes: 10_000)
        let sent = try Self.written(channel)
        #expect(sent.map(\.type) == [1, 0, 1, 0])
        #expect(sent[1].payload.readableBytes == 60_000 && sent[3].payload.readableBytes == 5_535 && sent[3].flags & 1 == 0)
        try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 8, flags: 0, stream: 0, [0, 0, 0x27, 0x10])))  // +10,000
        let rest = try Self.written(channel)
        #expect(rest.count == 1 && rest[0].stream == 3 && rest[0].payload.readableBytes == 4_465 && rest[0].flags & 1 == 1)
    }

    @Test("a stream reset while its DATA waits for the connection window drops that DATA; the next stream's goes")
    func resetDropsWaitingData() throws {
        let channel = try Self.connected(settings: [(4, 1 << 20), (5, 65_535)])
        _ = Self.request(channel, stream: 1, bodyBytes: 65_535)  // the whole connection window
        let (_, dropped) = Self.request(channel, stream: 3, bodyBytes: 100)
        _ = Self.request(channel, stream: 5, bodyBytes: 50)
        #expect(try Self.written(channel).map(\.type) == [1, 0, 1, 1])
        var failure: (any Error)?
        dropped.whenFailure { failure = $0 }
        try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 3, flags: 0, stream: 3, [0, 0, 0, 8])))  // RST_STREAM CANCEL
        #expect(failure != nil)
        try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 8, flags: 0, stream: 0, [0, 0, 1, 0])))  // +256
        let sent = try Self.written(channel)
        #expect(sent.map(\.stream) == [5] && sent.first?.payload.readableBytes == 50)
    }

    @Test("past the server's stream limit a stream waits, and opens when one closes; one reset while waiting never goes out")
    func streamLimit() throws {
        let channel = try Self.connected(settings: [(3, 1)])
        _ = Self.request(channel, stream: 1, bodyBytes: 10)
        let (waiting, _) = Self.request(channel, stream: 3, bodyBytes: 10)
        let (reset, _) = Self.request(channel, stream: 5, bodyBytes: 10)
        #expect(try Self.written(channel).map(\.stream) == [1, 1])
        var resetFailed = false
        reset.whenFailure { _ in resetFailed = true }
        channel.write(HTTP2ClientWrite.frame(HTTP2Frame(streamID: 5, payload: .rstStream(.cancel))), promise: nil)
        channel.flush()
        #expect(resetFailed)
        var opened = false
        waiting.whenSuccess { opened = true }
        // The answer to stream 1 closes it.
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        var block = ByteBuffer()
        try encoder.encode(headers: [":status": "200"], to: &block)
        try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 1, flags: 0x5, stream: 1, Array(block.readableBytesView))))
        #expect(try Self.written(channel).map(\.stream) == [3, 3])
        #expect(opened)
        #expect(try channel.readInbound(as: HTTP2Frame.self)?.streamID == 1)
    }

    @Test("a request written whole (the connection handler's form) waits for the stream limit, its pseudo-headers lead its block, and its body waits for window")
    func wholeRequests() throws {
        let channel = try Self.connected(settings: [(3, 1), (4, 100)])
        func request(_ stream: Int, bodyBytes: Int) -> EventLoopFuture<Void> {
            var headers = HPACKHeaders()
            headers.add(name: "apns-id", value: "id-\(stream)", indexing: .nonIndexable)
            let outgoing = HTTP2OutgoingRequest(
                streamID: HTTP2StreamID(stream), method: "POST", path: "/3/device/\(stream)", authority: "push.example", headers: headers,
                body: ByteBuffer(repeating: 0x61, count: bodyBytes))
            let written = channel.write(HTTP2ClientWrite.request(outgoing))
            channel.flush()
            return written
        }
        let first = request(1, bodyBytes: 300)
        let second = request(3, bodyBytes: 10)
        var opened = [false, false]
        first.whenSuccess { opened[0] = true }
        second.whenSuccess { opened[1] = true }
        // Stream 1's HEADERS and the 100 bytes its window allows; stream 3 waits for the limit.
        var sent = try Self.written(channel)
        #expect(sent.map(\.type) == [1, 0] && sent.map(\.stream) == [1, 1])
        #expect(sent[0].flags & 0x1 == 0 && sent[1].payload.readableBytes == 100 && sent[1].flags & 0x1 == 0)
        #expect(opened == [true, false])
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var block = sent[0].payload
        let decoded = try decoder.decodeHeaders(from: &block)
        #expect(decoded.map(\.name) == [":method", ":scheme", ":path", ":authority", "apns-id"])
        #expect(decoded.map(\.value) == ["POST", "https", "/3/device/1", "push.example", "id-1"])
        // The rest of the body when the window opens, ending the stream.
        try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 8, flags: 0, stream: 1, [0, 0, 0, 200])))
        sent = try Self.written(channel)
        #expect(sent.map(\.type) == [0] && sent[0].payload.readableBytes == 200 && sent[0].flags & 0x1 == 1)
        // The answer to stream 1 closes it: stream 3 goes whole.
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        var answer = ByteBuffer()
        try encoder.encode(headers: [":status": "200"], to: &answer)
        try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 1, flags: 0x5, stream: 1, Array(answer.readableBytesView))))
        sent = try Self.written(channel)
        #expect(sent.map(\.type) == [1, 0] && sent.map(\.stream) == [3, 3] && sent[1].payload.readableBytes == 10 && sent[1].flags & 0x1 == 1)
        #expect(opened == [true, true])
    }

    @Test("a header block past the server's frame size goes as HEADERS and CONTINUATION; one that arrives padded, with priority and continued, is read")
    func headerBlocksInPieces() throws {
        let channel = try Self.connected(settings: [])
        var headers: HPACKHeaders = [":method": "POST", ":path": "/"]
        headers.add(name: "x-pad", value: String(repeating: "p", count: 40_000), indexing: .nonIndexable)
        channel.write(HTTP2ClientWrite.frame(HTTP2Frame(streamID: 1, payload: .headers(.init(headers: headers, endStream: true)))), promise: nil)
        channel.flush()
        let frames = try Self.written(channel)
        #expect(frames.map(\.type) == [1, 9, 9] && frames.map { $0.flags & 0x4 } == [0, 0, 4] && frames[0].flags & 1 == 1)
        var block = ByteBuffer()
        for var frame in frames { block.writeBuffer(&frame.payload) }
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: 4_096, maxHeaderListSize: 65_536)
        #expect(try decoder.decodeHeaders(from: &block) == headers)

        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        var answer = ByteBuffer()
        try encoder.encode(headers: [":status": "200", "apns-id": "0f4c2d9e-0000-4000-8000-000000000000"], to: &answer)
        let bytes = Array(answer.readableBytesView)
        // PADDED (3 bytes of padding) and PRIORITY, then the rest of the block in a CONTINUATION.
        let first = [3, 0, 0, 0, 0, 16] + bytes[0..<10] + [0, 0, 0]
        try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 1, flags: 0x8 | 0x20 | 0x1, stream: 1, Array(first))))
        #expect(try channel.readInbound(as: HTTP2Frame.self) == nil)
        try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 9, flags: 0x4, stream: 1, Array(bytes[10...]))))
        let frame = try channel.readInbound(as: HTTP2Frame.self)
        guard case .headers(let read)? = frame?.payload else {
            Issue.record("no HEADERS: \(String(describing: frame))")
            return
        }
        #expect(read.headers.first(name: "apns-id") == "0f4c2d9e-0000-4000-8000-000000000000" && read.endStream)
    }

    @Test("a PING is answered with its own bytes; a frame of an unknown type is skipped")
    func pingAndUnknownFrames() throws {
        let channel = try Self.connected(settings: [])
        try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 0xfa, flags: 0xff, stream: 9, [1, 2, 3])))
        try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 6, flags: 0, stream: 0, [1, 2, 3, 4, 5, 6, 7, 8])))
        let pong = try Self.written(channel)
        #expect(pong.count == 1 && pong[0].type == 6 && pong[0].flags == 1 && Array(pong[0].payload.readableBytesView) == [1, 2, 3, 4, 5, 6, 7, 8])
        guard case .ping(_, ack: false)? = try channel.readInbound(as: HTTP2Frame.self)?.payload else {
            Issue.record("the PING was not passed on")
            return
        }
        #expect(channel.isActive)
    }

    @Test("a stream waits for the server's SETTINGS (its limits); frames that arrive a byte at a time are read as whole ones")
    func framesSplitAcrossReads() throws {
        let channel = try Self.channel()
        _ = try Self.written(channel)
        _ = Self.request(channel, stream: 1, bodyBytes: 10)
        #expect(try Self.written(channel).isEmpty)
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        var block = ByteBuffer()
        try encoder.encode(headers: [":status": "200", "apns-id": "0f4c2d9e-0000-4000-8000-000000000000"], to: &block)
        var bytes = Array(Self.settings([(3, 10)]).readableBytesView)
        bytes += WireFrame.encode(type: 1, flags: 0x4, stream: 1, Array(block.readableBytesView))
        bytes += WireFrame.encode(type: 0, flags: 0x1, stream: 1, Array("{}".utf8))
        for byte in bytes { try channel.writeInbound(ByteBuffer(bytes: [byte])) }
        #expect(try Self.written(channel).map(\.type) == [4, 1, 0])  // the SETTINGS ACK, then the stream
        var kinds: [String] = []
        while let frame = try channel.readInbound(as: HTTP2Frame.self) {
            switch frame.payload {
            case .settings: kinds.append("SETTINGS")
            case .headers(let headers): kinds.append("HEADERS \(headers.headers.first(name: ":status") ?? "-")")
            case .data(let data): kinds.append("DATA \(data.data.readableBytes) \(data.endStream)")
            default: kinds.append("other")
            }
        }
        #expect(kinds == ["SETTINGS", "HEADERS 200", "DATA 2 true"])
    }

    /// Frames RFC 9113 makes connection errors, each after the server's SETTINGS, and the code
    /// its GOAWAY must carry.
    static let violations: [(String, [UInt8], UInt32)] = [
        ("PUSH_PROMISE, refused by SETTINGS", WireFrame.encode(type: 5, flags: 0x4, stream: 1, [0, 0, 0, 2, 0x88]), 1),
        ("a frame over 16,384 bytes", WireFrame.encode(type: 0, flags: 0, stream: 1, Array(repeating: 0, count: 16_385)), 6),
        ("DATA on stream 0", WireFrame.encode(type: 0, flags: 0, stream: 0, [1]), 1),
        ("PING of 7 bytes", WireFrame.encode(type: 6, flags: 0, stream: 0, [1, 2, 3, 4, 5, 6, 7]), 6),
        ("SETTINGS on a stream", WireFrame.encode(type: 4, flags: 0, stream: 1, []), 1),
        ("SETTINGS_ENABLE_PUSH 1 from a server", WireFrame.encode(type: 4, flags: 0, stream: 0, [0, 2, 0, 0, 0, 1]), 1),
        ("SETTINGS_INITIAL_WINDOW_SIZE past 2^31-1", WireFrame.encode(type: 4, flags: 0, stream: 0, [0, 4, 0x80, 0, 0, 0]), 3),
        ("SETTINGS_MAX_FRAME_SIZE under 16,384", WireFrame.encode(type: 4, flags: 0, stream: 0, [0, 5, 0, 0, 0x10, 0]), 1),
        ("a connection window past 2^31-1", WireFrame.encode(type: 8, flags: 0, stream: 0, [0x7f, 0xff, 0xff, 0xff]), 3),
        ("WINDOW_UPDATE of 0", WireFrame.encode(type: 8, flags: 0, stream: 0, [0, 0, 0, 0]), 1),
        ("CONTINUATION without HEADERS", WireFrame.encode(type: 9, flags: 0x4, stream: 1, [0x88]), 1),
        ("a header block that does not decode", WireFrame.encode(type: 1, flags: 0x4, stream: 1, [0xff, 0xff, 0xff, 0xff, 0x0f]), 9),
        ("DATA padded past its length", WireFrame.encode(type: 0, flags: 0x8, stream: 1, [5, 0]), 1),
        ("DATA past the connection's receive window", Array((0..<5).map { _ in WireFrame.encode(type: 0, flags: 0, stream: 1, Array(repeating: 0, count: 16_384)) }.joined()), 3),
    ]

    @Test("a frame the protocol forbids ends the connection with GOAWAY and the right code", arguments: violations.indices)
    func violationEndsConnection(_ index: Int) throws {
        let (name, bytes, code) = Self.violations[index]
        let channel = try Self.connected(settings: [])
        _ = Self.request(channel, stream: 1, bodyBytes: 10)
        _ = try Self.written(channel)
        #expect(throws: TransportFailure.self, "\(name)") { try channel.writeInbound(ByteBuffer(bytes: bytes)) }
        let goAway = try Self.written(channel).last
        #expect(goAway?.type == 7, "\(name)")
        #expect(goAway?.payload.getInteger(at: goAway!.payload.readerIndex + 4, as: UInt32.self) == code, "\(name)")
        #expect(!channel.isActive, "\(name)")
    }

    @Test("the server's first frame must be SETTINGS")
    func prefaceMustBeSettings() throws {
        let channel = try Self.channel()
        _ = try Self.written(channel)
        #expect(throws: TransportFailure.self) {
            try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 6, flags: 0, stream: 0, [0, 0, 0, 0, 0, 0, 0, 0])))
        }
        #expect(try Self.written(channel).last?.type == 7 && !channel.isActive)
    }

    @Test("after GOAWAY a stream waiting for the limit never goes out, and its write fails as not processed")
    func goAwayFailsWaitingStreams() throws {
        let channel = try Self.connected(settings: [(3, 1)])
        _ = Self.request(channel, stream: 1, bodyBytes: 10)
        let (waiting, _) = Self.request(channel, stream: 3, bodyBytes: 10)
        _ = try Self.written(channel)
        var failure: (any Error)?
        waiting.whenFailure { failure = $0 }
        try channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: 7, flags: 0, stream: 0, [0, 0, 0, 1, 0, 0, 0, 0])))
        #expect(failure as? TransportFailure == .notProcessed)
        #expect(try Self.written(channel).isEmpty)
    }
}

/// A hostile server's bytes: whatever arrives, the framer answers with frames or a connection
/// error, never a crash, and never writes a frame RFC 9113 forbids a client.
@Suite struct HTTP2ClientFramerFuzzTests {
    /// SplitMix64: the same frames every run.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test("2,000 connections each fed random frames after the server's SETTINGS, with requests written between them", arguments: 0..<4)
    func randomFrames(_ seed: UInt64) throws {
        var random = SeededGenerator(state: seed)
        for _ in 0..<500 {
            let channel = EmbeddedChannel(handler: HTTP2ClientFramer())
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 443)).wait()
            let settings: [(UInt16, UInt32)] = [
                (UInt16.random(in: 1...6, using: &random), UInt32.random(in: 0...70_000, using: &random)),
                (4, UInt32.random(in: 0...2_000, using: &random)),
            ]
            _ = try? channel.writeInbound(HTTP2ClientFramerTests.settings(settings))
            var stream = 1
            for _ in 0..<Int.random(in: 1...12, using: &random) where channel.isActive {
                if Bool.random(using: &random) {
                    _ = HTTP2ClientFramerTests.request(channel, stream: stream, bodyBytes: Int.random(in: 0...3_000, using: &random))
                    stream += 2
                }
                let type = UInt8.random(in: 0...12, using: &random)
                let flags = UInt8.random(in: 0...255, using: &random)
                let target = UInt32.random(in: 0...UInt32(stream + 2), using: &random)
                let length = [0, 1, 4, 5, 6, 8, 9, 12, 40].randomElement(using: &random)!
                let payload = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                _ = try? channel.writeInbound(ByteBuffer(bytes: WireFrame.encode(type: type, flags: flags, stream: target, payload)))
            }
            // Whatever it wrote parses as frames, and none is one a client may not send.
            for frame in try HTTP2ClientFramerTests.written(channel) {
                #expect(![5, 9].contains(frame.type) || frame.type == 9 && frame.stream % 2 == 1)
                #expect(frame.type == 0 || frame.type == 1 || frame.type == 9 ? frame.stream % 2 == 1 : true)
            }
            _ = try? channel.finish()
        }
    }
}
