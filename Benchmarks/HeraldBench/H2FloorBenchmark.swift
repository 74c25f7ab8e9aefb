import ArgumentParser
import Foundation
import HeraldPushCore
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL

/// The APNs send path's floor in Swift: the pushes `herald send` makes, written as hand-built
/// HTTP/2 frames over NIOSSL on NIO's event loops — no NIOHTTP2, no Huffman coding, no futures
/// or tasks per push. What a client of our own could reach on this stack, beside h2load (C).
struct H2Floor: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "h2-floor",
        abstract: "APNs pushes as hand-built HTTP/2 frames over NIOSSL: the Swift/NIO floor beside h2load.")

    @Option(help: "the simulator's HTTP/2 port on 127.0.0.1") var port: Int
    @Option(help: "its CA (PEM)") var ca: String
    @Option(help: "the provider token (JWT)") var jwt: String
    @Option(help: "the device token (64 hex)") var token: String
    @Option(help: "a file with the payload") var payload: String
    @Option(help: "the topic") var topic = "com.example.bench"
    @Option(help: "pushes in all") var requests = 60_000
    @Option(help: "connections") var connections = 4
    @Option(help: "streams in flight per connection, at most") var streams = 250

    func run() throws {
        let body = Array(try Data(contentsOf: URL(fileURLWithPath: payload)))
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        tls.trustRoots = .file(ca)
        let context = try NIOSSLContext(configuration: tls)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        defer { try? group.syncShutdownGracefully() }
        let request = H2FloorConnection.Request(
            authority: "127.0.0.1:\(port)", path: "/3/device/\(token)", authorization: "bearer \(jwt)", topic: topic, body: body)
        let start = ContinuousClock.now
        let usage0 = WebPushThroughput.cpuSeconds()
        var futures: [EventLoopFuture<(Int, Int)>] = []
        for index in 0..<connections {
            let share = requests / connections + (index < requests % connections ? 1 : 0)
            let loop = group.next()
            let done = loop.makePromise(of: (Int, Int).self)
            let handler = H2FloorConnection(request: request, quota: share, maxInFlight: streams, done: done)
            let connected = ClientBootstrap(group: loop)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers(NIOSSLClientHandler(context: context, serverHostname: nil), handler)
                    }
                }
                .connect(host: "127.0.0.1", port: port)
            futures.append(connected.flatMap { channel in done.futureResult.always { _ in channel.close(promise: nil) } })
        }
        var accepted = 0
        var other = 0
        for future in futures {
            let (ok, failed) = try future.wait()
            accepted += ok
            other += failed
        }
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        let cpu = WebPushThroughput.cpuSeconds() - usage0
        let line: [String: Any] = [
            "benchmark": "h2-floor", "requests": requests, "accepted": accepted, "other": other, "connections": connections,
            "per_second": Int(Double(requests) / seconds), "cpu_us_per_push": (cpu / Double(requests) * 1e6 * 10).rounded() / 10,
        ]
        print(String(data: try JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]), encoding: .utf8)!)
    }
}

/// One connection: keeps up to `maxInFlight` streams open (and within the server's limit) until
/// its quota is sent and answered, or two minutes have passed. Confined to its channel's event
/// loop (hence `@unchecked Sendable`: the bootstrap's initializer only hands it over).
final class H2FloorConnection: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    struct Request: Sendable {
        var authority: String
        var path: String
        var authorization: String
        var topic: String
        var body: [UInt8]
    }

    private let request: Request
    private var quota: Int
    private let maxInFlight: Int
    private let done: EventLoopPromise<(Int, Int)>
    private var buffer = ByteBuffer()
    private var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
    private var nextStream: UInt32 = 1
    private var inFlight = 0
    private var serverLimit = 1
    private var sendWindow = 65_535
    private var received = 0
    private var accepted = 0
    private var other = 0
    private var indexed = false
    private var finished = false
    private var blockPrefix: [UInt8] = []

    init(request: Request, quota: Int, maxInFlight: Int, done: EventLoopPromise<(Int, Int)>) {
        self.request = request
        self.quota = quota
        self.maxInFlight = maxInFlight
        self.done = done
    }

    func channelActive(context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .seconds(120)) { loopBound.value.finish() }
        var out = context.channel.allocator.buffer(capacity: 64)
        out.writeString("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        // SETTINGS: no push; a 1 MiB stream window. Then the connection window to 1 MiB.
        Self.frameHeader(&out, length: 12, type: 4, flags: 0, stream: 0)
        out.writeInteger(UInt16(2)); out.writeInteger(UInt32(0))
        out.writeInteger(UInt16(4)); out.writeInteger(UInt32(1 << 20))
        Self.frameHeader(&out, length: 4, type: 8, flags: 0, stream: 0)
        out.writeInteger(UInt32((1 << 20) - 65_535))
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        buffer.writeBuffer(&bytes)
        var out = context.channel.allocator.buffer(capacity: 0)
        while buffer.readableBytes >= 9, let head = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self),
            buffer.readableBytes >= 9 + Int(head >> 8)
        {
            let length = Int(head >> 8)
            buffer.moveReaderIndex(forwardBy: 3)
            let type = buffer.readInteger(as: UInt8.self)!
            let flags = buffer.readInteger(as: UInt8.self)!
            let stream = buffer.readInteger(as: UInt32.self)! & 0x7fff_ffff
            var payload = buffer.readSlice(length: length)!
            switch type {
            case 0:  // DATA
                received += length
                if flags & 0x1 != 0 { answered(ok: false) }
            case 1:  // HEADERS (this server sends neither padding nor priority)
                let headers = try? decoder.decodeHeaders(from: &payload)
                if flags & 0x1 != 0 { answered(ok: headers?.first(name: ":status") == "200") }
            case 3: answered(ok: false)  // RST_STREAM
            case 4 where flags & 0x1 == 0:  // SETTINGS
                while let id = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) {
                    if id == 3 { serverLimit = Int(value) }
                }
                Self.frameHeader(&out, length: 0, type: 4, flags: 0x1, stream: 0)
            case 6 where flags & 0x1 == 0:  // PING
                Self.frameHeader(&out, length: 8, type: 6, flags: 0x1, stream: 0)
                out.writeBuffer(&payload)
            case 7: finish()  // GOAWAY
            case 8 where stream == 0: sendWindow += Int(payload.readInteger(as: UInt32.self)! & 0x7fff_ffff)
            default: break
            }
        }
        buffer.discardReadBytes()
        if received >= 32_768 {
            Self.frameHeader(&out, length: 4, type: 8, flags: 0, stream: 0)
            out.writeInteger(UInt32(received))
            received = 0
        }
        if out.readableBytes > 0 { context.write(wrapOutboundOut(out), promise: nil) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        pump(context: context)
        context.flush()
    }

    private func answered(ok: Bool) {
        inFlight -= 1
        if ok { accepted += 1 } else { other += 1 }
        if quota == 0, inFlight == 0 { finish() }
    }

    private func finish() {
        guard !finished else { return }
        finished = true
        done.succeed((accepted, other))
    }

    /// Opens streams up to the limits, all in one buffer.
    private func pump(context: ChannelHandlerContext) {
        guard !finished else { return }
        var out = context.channel.allocator.buffer(capacity: 0)
        while quota > 0, inFlight < min(maxInFlight, serverLimit), sendWindow >= request.body.count {
            writeRequest(&out)
            quota -= 1
            inFlight += 1
            sendWindow -= request.body.count
            // Until the server's first answer lifts its limit of 1, one stream.
            if accepted == 0 { break }
        }
        if out.readableBytes > 0 { context.write(wrapOutboundOut(out), promise: nil) }
    }

    /// HEADERS and DATA of one push: static-table indexes, the token's headers indexed once in
    /// the dynamic table, the path and a fresh apns-id as raw literals.
    private func writeRequest(_ out: inout ByteBuffer) {
        var block: [UInt8] = [0x83, 0x87]  // :method POST, :scheme https
        Self.literal(&block, nameIndex: 4, request.path)  // :path
        Self.literal(&block, nameIndex: 1, request.authority)  // :authority
        if indexed {
            block += [0xBE, 0xBF, 0xC0]  // 62: apns-push-type, 63: apns-topic, 64: authorization
        } else {
            block.append(0x40 | 23)  // authorization, incremental indexing
            Self.integer(&block, request.authorization.utf8.count, prefix: 7)
            block += request.authorization.utf8
            for (name, value) in [("apns-topic", request.topic), ("apns-push-type", "alert")] {
                block.append(0x40)
                Self.integer(&block, name.utf8.count, prefix: 7)
                block += name.utf8
                Self.integer(&block, value.utf8.count, prefix: 7)
                block += value.utf8
            }
            indexed = true
        }
        block.append(0)
        Self.integer(&block, 7, prefix: 7)
        block += "apns-id".utf8
        let id = UUID.random().lowercasedString
        Self.integer(&block, id.utf8.count, prefix: 7)
        block += id.utf8
        Self.frameHeader(&out, length: block.count, type: 1, flags: 0x4, stream: nextStream)
        out.writeBytes(block)
        Self.frameHeader(&out, length: request.body.count, type: 0, flags: 0x1, stream: nextStream)
        out.writeBytes(request.body)
        nextStream += 2
    }

    static func literal(_ block: inout [UInt8], nameIndex: Int, _ value: String) {
        integer(&block, nameIndex, prefix: 4)  // literal without indexing, indexed name
        integer(&block, value.utf8.count, prefix: 7)
        block += value.utf8
    }

    /// RFC 7541 §5.1, starting a byte of its own: for representations whose pattern bits above
    /// the prefix are zero (a literal without indexing's name index, a length without Huffman).
    static func integer(_ block: inout [UInt8], _ value: Int, prefix: Int) {
        let limit = (1 << prefix) - 1
        guard value >= limit else {
            block.append(UInt8(value))
            return
        }
        block.append(UInt8(limit))
        var rest = value - limit
        while rest >= 128 {
            block.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        block.append(UInt8(rest))
    }

    static func frameHeader(_ out: inout ByteBuffer, length: Int, type: UInt8, flags: UInt8, stream: UInt32) {
        out.writeInteger(UInt8(length >> 16))
        out.writeInteger(UInt16(length & 0xffff))
        out.writeInteger(type)
        out.writeInteger(flags)
        out.writeInteger(stream)
    }
}
