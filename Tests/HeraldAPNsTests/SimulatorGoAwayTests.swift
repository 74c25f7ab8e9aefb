import Foundation
import HeraldAPNsCore
import HeraldAPNsSimulator
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import Synchronization
import Testing

/// `herald mock-apns` past its own GOAWAY, spoken to in raw HTTP/2 frames: a client's frames may
/// arrive in any order a client may send them, as Apple's servers would take them.
@Suite("APNs simulator after GOAWAY")
struct SimulatorGoAwayTests {
    @Test("DATA of a stream refused after GOAWAY, ahead of DATA for streams the GOAWAY kept: those are still read and answered")
    func refusedStreamDataDoesNotStrandEarlierStreams() async throws {
        try await SimulatorFixture.with { f in
            // The third stream on a connection triggers the GOAWAY; it names the highest opened.
            try f.simulator.inject(SimulatorFault(kind: .goaway, afterStreams: 3))
            let authorization = await APNsProviderTokenSource(key: f.key).currentToken().authorizationHeader
            let client = try await RawHTTP2Client.connect(port: f.simulator.port, caPath: f.caPath, group: f.group)
            let request = RawHTTP2Client.requestHeaders(
                authority: "127.0.0.1:\(f.simulator.port)", path: "/3/device/\(deviceToken(1))", authorization: authorization)
            let body = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

            // Stream 1 whole: a valid token lifts the simulator's limit of 1 stream.
            try await client.write(WireFrame.encode(type: 1, flags: 0x4, stream: 1, request) + WireFrame.encode(type: 0, flags: 0x1, stream: 1, body))
            #expect(try await client.status(of: 1) == "200")
            // Streams 3 and 5 open without their DATA; the GOAWAY names 5.
            try await client.write(WireFrame.encode(type: 1, flags: 0x4, stream: 3, request) + WireFrame.encode(type: 1, flags: 0x4, stream: 5, request))
            #expect(try await client.goAwayLastStream() == 5)
            // Stream 7, sent before this client read the GOAWAY, is refused; its DATA comes first.
            try await client.write(
                WireFrame.encode(type: 1, flags: 0x4, stream: 7, request) + WireFrame.encode(type: 0, flags: 0x1, stream: 7, body)
                    + WireFrame.encode(type: 0, flags: 0x1, stream: 3, body) + WireFrame.encode(type: 0, flags: 0x1, stream: 5, body))
            // Without the simulator reading on past stream 7's DATA, 3 and 5 waited for the client's next write.
            #expect(try await client.status(of: 3) == "200")
            #expect(try await client.status(of: 5) == "200")
            try await client.close()
        }
    }
}

/// HTTP/2 over TLS written frame by frame, so a test chooses the exact order on the wire.
final class RawHTTP2Client: Sendable {
    let channel: any Channel
    let frames: Frames

    /// Frames read so far; answers the server's SETTINGS and decodes header blocks in order.
    final class Frames: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        struct State {
            var buffer = ByteBuffer()
            var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
            var statuses: [UInt32: String] = [:]
            var goAwayLastStream: UInt32?
            var failure: String?
        }
        let state = Mutex(State())

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            var acks = 0
            state.withLock { state in
                state.buffer.writeBuffer(&bytes)
                while var (type, flags, stream, payload) = WireFrame.read(from: &state.buffer) {
                    switch type {
                    case 1:  // HEADERS, unpadded and without priority from this server
                        if let headers = try? state.decoder.decodeHeaders(from: &payload), let status = headers.first(name: ":status") {
                            state.statuses[stream] = status
                        }
                    case 4 where flags & 0x1 == 0: acks += 1  // SETTINGS to acknowledge
                    case 7: state.goAwayLastStream = payload.readInteger(as: UInt32.self).map { $0 & 0x7fff_ffff }
                    default: break
                    }
                }
                state.buffer.discardReadBytes()
            }
            for _ in 0..<acks {
                context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: WireFrame.encode(type: 4, flags: 0x1, stream: 0, []))), promise: nil)
            }
        }

        /// The preface first, before anything this handler answers.
        func channelActive(context: ChannelHandlerContext) {
            let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + WireFrame.encode(type: 4, flags: 0, stream: 0, [])
            context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: preface)), promise: nil)
            context.fireChannelActive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            state.withLock { $0.failure = $0.failure ?? "\(error)" }
            context.close(promise: nil)
        }

        func channelInactive(context: ChannelHandlerContext) {
            state.withLock { $0.failure = $0.failure ?? "closed" }
        }
    }

    private init(channel: any Channel, frames: Frames) {
        self.channel = channel
        self.frames = frames
    }

    static func connect(port: Int, caPath: String, group: any EventLoopGroup) async throws -> RawHTTP2Client {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        tls.trustRoots = .file(caPath)
        let context = try NIOSSLContext(configuration: tls)
        let frames = Frames()
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers(NIOSSLClientHandler(context: context, serverHostname: nil), frames)
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawHTTP2Client(channel: channel, frames: frames)
    }

    func write(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes)).get()
    }

    func close() async throws {
        try? await channel.close().get()
    }

    /// The `:status` of `stream`'s answer; fails the test after 10 s without one.
    func status(of stream: UInt32) async throws -> String? {
        try await poll { $0.statuses[stream] }
    }

    func goAwayLastStream() async throws -> UInt32? {
        try await poll { $0.goAwayLastStream }
    }

    private func poll<T>(_ value: (Frames.State) -> T?) async throws -> T? {
        for _ in 0..<1_000 {
            if let found = frames.state.withLock({ value($0) }) { return found }
            if let failure = frames.state.withLock({ $0.failure }) {
                Issue.record("the connection ended: \(failure)")
                return nil
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }

    /// An APNs request's header block: literals without indexing, no Huffman coding.
    static func requestHeaders(authority: String, path: String, authorization: String) -> [UInt8] {
        let fields = [
            (":method", "POST"), (":scheme", "https"), (":path", path), (":authority", authority), ("authorization", authorization),
            ("apns-topic", SimulatorFixture.topic), ("apns-push-type", "alert"),
        ]
        var block: [UInt8] = []
        for (name, value) in fields {
            block.append(0)
            block += integer(name.utf8.count) + Array(name.utf8)
            block += integer(value.utf8.count) + Array(value.utf8)
        }
        return block
    }

    /// HPACK's integer with a 7-bit prefix (RFC 7541 §5.1), the Huffman bit clear.
    static func integer(_ value: Int) -> [UInt8] {
        guard value >= 127 else { return [UInt8(value)] }
        var bytes: [UInt8] = [127]
        var rest = value - 127
        while rest >= 128 {
            bytes.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        return bytes + [UInt8(rest)]
    }
}
