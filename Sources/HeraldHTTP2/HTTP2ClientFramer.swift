import HeraldPushCore
import NIOCore
import NIOHPACK
import NIOHTTP2

/// HTTP/2's framing and flow control (RFC 9113) for a client of a push service that TLS has
/// authenticated (APNs, FCM), in place of `NIOHTTP2Handler`: bytes in, `HTTP2Frame`s out to the
/// connection handler, and its writes (`HTTP2ClientWrite`: requests and frames) back to bytes.
///
/// It keeps only what a client that opens every stream itself needs: the open streams (for the
/// server's stream limit and flow control), DATA waiting for window, and streams waiting for the
/// limit, which a server such as APNs drops to 1 after a rejection. HEADERS go out without Huffman
/// coding (`HeaderBlockEncoder`), each stream's frames in one buffer written at its flush. A frame the protocol forbids
/// (wrong size, wrong stream, a header block that does not decode, window overflow, PUSH_PROMISE,
/// which the SETTINGS refuse) ends the connection with GOAWAY: the connection handler then fails
/// its requests, and the pool replaces the connection.
final class HTTP2ClientFramer: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2ClientWrite
    typealias OutboundOut = ByteBuffer

    /// What this client announces: no server push, 100 server streams (it accepts none), a 1 MiB
    /// window per stream, and a 16 KiB header list.
    static let localSettings: [(parameter: UInt16, value: UInt32)] = [(2, 0), (3, 100), (4, 1 << 20), (6, 16_384)]
    /// The largest frame accepted: HTTP/2's default, since this client announces no other.
    static let maximumFrameSize = 16_384
    /// A header block split over CONTINUATION frames is held to this many bytes.
    static let maximumHeaderBlock = 65_536
    static let maximumWindow = Int(Int32.max)

    private struct OpenStream {
        var sendWindow: Int
        var localEnded = false
        var remoteEnded = false
        /// Its entries in `blocked`: a stream without any closes without a pass over them.
        var blockedEntries = 0
    }

    /// A write held in the connection: DATA the flow-control windows hold back, or a frame of a
    /// stream the server's limit keeps from opening.
    private protocol HeldWrite {
        var streamID: HTTP2StreamID { get }
        var promise: EventLoopPromise<Void>? { get }
    }

    private struct BlockedData: HeldWrite {
        var streamID: HTTP2StreamID
        var data: ByteBuffer
        var endStream: Bool
        var promise: EventLoopPromise<Void>?
    }

    private struct ParkedWrite: HeldWrite {
        var write: HTTP2ClientWrite
        var promise: EventLoopPromise<Void>?
        var streamID: HTTP2StreamID { write.streamID }
    }

    private var context: ChannelHandlerContext?
    private var inbound = ByteBuffer()
    private var sawServerSettings = false
    /// A header block waiting for its CONTINUATION frames.
    private var headerBlock: (streamID: HTTP2StreamID, endStream: Bool, fragment: ByteBuffer)?
    private var decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: HPACKDecoder.maxDynamicTableSize, maxHeaderListSize: 16_384)
    private var encoder = HeaderBlockEncoder()
    private var peerMaxFrameSize = 16_384
    private var peerInitialWindow = 65_535
    private var peerMaxStreams = Int.max
    private var connectionSendWindow = 65_535
    private var connectionReceiveWindow = 65_535
    private var streams: [HTTP2StreamID: OpenStream] = [:]
    private var blocked = CircularBuffer<BlockedData>()
    /// Frames of streams not yet opened because the server's stream limit is reached, in order.
    private var parked = CircularBuffer<ParkedWrite>()
    private var lastOpenedStreamID = HTTP2StreamID(0)
    private var goAwayLastStreamID: HTTP2StreamID?
    private var failed = false
    /// Bytes for the next flush, and the promises their write completes.
    private var output: ByteBuffer?
    private var outputPromise: EventLoopPromise<Void>?

    init() {}

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { sendPreface(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        sendPreface(context: context)
        context.fireChannelActive()
    }

    private var sentPreface = false

    private func sendPreface(context: ChannelHandlerContext) {
        guard !sentPreface else { return }
        sentPreface = true
        var out = context.channel.allocator.buffer(capacity: 64)
        out.writeString("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        Self.writeFrameHeader(&out, length: 6 * Self.localSettings.count, type: 4, flags: 0, streamID: .rootStream)
        for setting in Self.localSettings {
            out.writeInteger(setting.parameter)
            out.writeInteger(setting.value)
        }
        context.writeAndFlush(wrapOutboundOut(out), promise: nil)
    }

    // MARK: Writing

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !failed else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        let write = unwrapOutboundIn(data)
        let opens: Bool
        switch write {
        case .request: opens = true
        case .frame(let frame):
            switch frame.payload {
            case .headers: opens = true
            case .data: opens = false
            default: return writeControlFrame(frame, promise: promise, context: context)
            }
        }
        // Behind a parked stream, every frame of a stream not yet open waits its turn.
        if !parked.isEmpty, streams[write.streamID] == nil {
            parked.append(ParkedWrite(write: write, promise: promise))
        } else if opens, !sawServerSettings || streams.count >= peerMaxStreams {
            // Until the server's SETTINGS its limits are unknown: a stream waits for them.
            parked.append(ParkedWrite(write: write, promise: promise))
        } else {
            writeOnStream(write, promise: promise, context: context)
        }
    }

    private func writeControlFrame(_ frame: HTTP2Frame, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        switch frame.payload {
        case .rstStream(let code):
            if streams[frame.streamID] != nil {
                closeStream(frame.streamID)
                appendFrame(type: 3, flags: 0, streamID: frame.streamID, promise: promise) { $0.writeInteger(UInt32(code.networkCode)) }
                unparkWithinLimit(context: context)
            } else {
                // Parked (never opened) or already closed: nothing to reset on the wire.
                for held in Self.remove(frame.streamID, from: &parked) { held.fail(TransportFailure.notProcessed) }
                promise?.succeed()
            }
        case .windowUpdate(let increment):
            if frame.streamID == .rootStream { connectionReceiveWindow += increment }
            appendFrame(type: 8, flags: 0, streamID: frame.streamID, promise: promise) { $0.writeInteger(UInt32(increment)) }
        case .ping(let data, let ack):
            appendFrame(type: 6, flags: ack ? 1 : 0, streamID: .rootStream, promise: promise) { $0.writeInteger(data.integer) }
        case .goAway(let lastStreamID, let code, _):
            appendFrame(type: 7, flags: 0, streamID: .rootStream, promise: promise) {
                $0.writeInteger(UInt32(Int32(lastStreamID)))
                $0.writeInteger(UInt32(code.networkCode))
            }
        default:
            promise?.fail(TransportFailure.protocolError("frame not sent by this client: \(frame.payload)"))
        }
    }

    func flush(context: ChannelHandlerContext) {
        if let output, output.readableBytes > 0 {
            context.write(wrapOutboundOut(output), promise: outputPromise)
        }
        output = nil
        outputPromise = nil
        context.flush()
    }

    private func writeOnStream(_ write: HTTP2ClientWrite, promise: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        switch write {
        case .request(let request):
            // The promise is the HEADERS': the body may wait for window after they went out.
            guard openStream(request.streamID, request.headers, request: request, endStream: request.body == nil, promise: promise),
                let body = request.body
            else { return }
            writeData(BlockedData(streamID: request.streamID, data: body, endStream: true, promise: nil))
        case .frame(let frame):
            switch frame.payload {
            case .headers(let headers):
                openStream(frame.streamID, headers.headers, request: nil, endStream: headers.endStream, promise: promise)
            case .data(let data):
                guard case .byteBuffer(let bytes) = data.data, streams[frame.streamID]?.localEnded == false else {
                    promise?.fail(TransportFailure.protocolError("DATA for stream \(frame.streamID), not open for sending"))
                    return
                }
                writeData(BlockedData(streamID: frame.streamID, data: bytes, endStream: data.endStream, promise: promise))
            default:
                preconditionFailure("only HEADERS and DATA open streams")
            }
        }
    }

    /// DATA now if the windows allow and nothing waits ahead of it, else in the queue.
    private func writeData(_ data: BlockedData) {
        var entry = data
        if blocked.isEmpty, sendData(&entry) { return }
        block(entry)
    }

    /// A stream's HEADERS: `headers` after `request`'s pseudo-headers if there is one. False when
    /// the stream cannot open (past the server's GOAWAY, an id not above the last).
    @discardableResult
    private func openStream(
        _ streamID: HTTP2StreamID, _ headers: HPACKHeaders, request: HTTP2OutgoingRequest?, endStream: Bool, promise: EventLoopPromise<Void>?
    ) -> Bool {
        if let last = goAwayLastStreamID, streamID > last {
            promise?.fail(TransportFailure.notProcessed)
            return false
        }
        // Stream ids only grow (RFC 9113 §5.1.1).
        guard streamID > lastOpenedStreamID else {
            promise?.fail(TransportFailure.protocolError("HEADERS for stream \(streamID), not above \(lastOpenedStreamID)"))
            return false
        }
        appendHeaders(headers, request: request, endStream: endStream, streamID: streamID, promise: promise)
        lastOpenedStreamID = streamID
        streams[streamID] = OpenStream(sendWindow: peerInitialWindow, localEnded: endStream)
        return true
    }

    private func appendHeaders(
        _ headers: HPACKHeaders, request: HTTP2OutgoingRequest?, endStream: Bool, streamID: HTTP2StreamID, promise: EventLoopPromise<Void>?
    ) {
        var out = takeOutput(promise: promise)
        defer { output = out }
        let start = out.writerIndex
        out.writeRepeatingByte(0, count: 9)
        encoder.encode(headers, request: request, into: &out)
        let blockLength = out.writerIndex - start - 9
        let endStreamFlag: UInt8 = endStream ? 0x1 : 0
        if blockLength <= peerMaxFrameSize {
            Self.setFrameHeader(&out, at: start, length: blockLength, type: 1, flags: 0x4 | endStreamFlag, streamID: streamID)
            return
        }
        // Past the server's frame size: HEADERS, then CONTINUATION frames.
        var block = ByteBuffer(buffer: out.getSlice(at: start + 9, length: blockLength)!)
        out.moveWriterIndex(to: start)
        var type: UInt8 = 1
        while block.readableBytes > 0 {
            var fragment = block.readSlice(length: min(peerMaxFrameSize, block.readableBytes))!
            let flags: UInt8 = (type == 1 ? endStreamFlag : 0) | (block.readableBytes == 0 ? 0x4 : 0)
            Self.writeFrameHeader(&out, length: fragment.readableBytes, type: type, flags: flags, streamID: streamID)
            out.writeBuffer(&fragment)
            type = 9
        }
    }

    /// Writes as much of `entry` as the windows allow, in frames of the server's size; true once
    /// all of it has gone.
    private func sendData(_ entry: inout BlockedData) -> Bool {
        let streamID = entry.streamID
        guard let index = streams.index(forKey: streamID) else { return false }
        var out = takeOutput(promise: nil)
        repeat {
            // A window may be negative (a lowered SETTINGS_INITIAL_WINDOW_SIZE); empty DATA needs none.
            let window = min(connectionSendWindow, streams.values[index].sendWindow)
            let size = max(0, min(entry.data.readableBytes, window, peerMaxFrameSize))
            if size == 0, entry.data.readableBytes > 0 { break }
            var chunk = entry.data.readSlice(length: size)!
            let last = entry.data.readableBytes == 0
            Self.writeFrameHeader(&out, length: size, type: 0, flags: last && entry.endStream ? 0x1 : 0, streamID: streamID)
            out.writeBuffer(&chunk)
            connectionSendWindow -= size
            streams.values[index].sendWindow -= size
        } while entry.data.readableBytes > 0
        output = out
        guard entry.data.readableBytes == 0 else { return false }
        addOutputPromise(entry.promise)
        if entry.endStream {
            streams.values[index].localEnded = true
            if streams.values[index].remoteEnded { closeStream(streamID) }
        }
        return true
    }

    /// Sends what the windows now allow of the DATA waiting, in order; a stream out of window
    /// waits without holding back the others.
    private func sendBlockedData() {
        // From the front while the connection window lasts: DATA the connection window held.
        while connectionSendWindow > 0, let first = blocked.first {
            guard let stream = streams[first.streamID] else {
                blocked.removeFirst().promise?.fail(TransportFailure.connectionClosed)
                continue
            }
            if first.data.readableBytes > 0, stream.sendWindow <= 0 { break }
            var entry = unblockFirst()
            if !sendData(&entry) {
                block(entry, atFront: true)
                if connectionSendWindow <= 0 { return }
                break
            }
        }
        guard connectionSendWindow > 0, !blocked.isEmpty else { return }
        // A stream out of its own window is at the front: one pass over the rest, in order.
        var waiting: Set<HTTP2StreamID> = []
        for _ in 0..<blocked.count {
            var entry = unblockFirst()
            guard let stream = streams[entry.streamID] else {
                entry.promise?.fail(TransportFailure.connectionClosed)
                continue
            }
            let outOfWindow = entry.data.readableBytes > 0 && (stream.sendWindow <= 0 || connectionSendWindow <= 0)
            if outOfWindow || waiting.contains(entry.streamID) || !sendData(&entry) {
                waiting.insert(entry.streamID)
                block(entry)
            }
        }
    }

    /// Queues DATA the windows hold back (at the back, or at the front when part of it went).
    private func block(_ entry: BlockedData, atFront: Bool = false) {
        if atFront { blocked.prepend(entry) } else { blocked.append(entry) }
        if let index = streams.index(forKey: entry.streamID) { streams.values[index].blockedEntries += 1 }
    }

    /// Takes the first DATA waiting off the queue.
    private func unblockFirst() -> BlockedData {
        let entry = blocked.removeFirst()
        if let index = streams.index(forKey: entry.streamID) { streams.values[index].blockedEntries -= 1 }
        return entry
    }

    // MARK: Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var bytes = unwrapInboundIn(data)
        if inbound.readableBytes == 0 {
            inbound = bytes
        } else {
            inbound.writeBuffer(&bytes)
        }
        while !failed, inbound.readableBytes >= 9, let head = inbound.getInteger(at: inbound.readerIndex, as: UInt32.self) {
            let length = Int(head >> 8)
            guard length <= Self.maximumFrameSize else {
                connectionError(.frameSizeError, "a \(length)-byte frame", context: context)
                return
            }
            guard inbound.readableBytes >= 9 + length else { break }
            inbound.moveReaderIndex(forwardBy: 3)
            let type = inbound.readInteger(as: UInt8.self)!
            let flags = inbound.readInteger(as: UInt8.self)!
            let streamID = HTTP2StreamID(Int32(bitPattern: inbound.readInteger(as: UInt32.self)! & 0x7fff_ffff))
            let payload = inbound.readSlice(length: length)!
            readFrame(type: type, flags: flags, streamID: streamID, payload: payload, context: context)
        }
        if inbound.readableBytes == 0 { inbound = ByteBuffer() } else { inbound.discardReadBytes() }
        if !failed, output != nil { flush(context: context) }
    }

    private func readFrame(type: UInt8, flags: UInt8, streamID: HTTP2StreamID, payload: ByteBuffer, context: ChannelHandlerContext) {
        var payload = payload
        if let block = headerBlock, type != 9 || streamID != block.streamID {
            return connectionError(.protocolError, "a frame inside a header block", context: context)
        }
        if !sawServerSettings, type != 4 || flags & 0x1 != 0 {
            return connectionError(.protocolError, "the server's first frame is not SETTINGS", context: context)
        }
        let onRootStream = streamID == .rootStream
        switch type {
        case 0:  // DATA
            guard !onRootStream else { return connectionError(.protocolError, "DATA on stream 0", context: context) }
            connectionReceiveWindow -= payload.readableBytes
            guard connectionReceiveWindow >= 0 else { return connectionError(.flowControlError, "DATA past the window", context: context) }
            let framed = payload.readableBytes
            guard let data = Self.unpad(&payload, flags: flags) else { return connectionError(.protocolError, "bad DATA padding", context: context) }
            if framed > data.readableBytes {
                // Padding counts against the window; give it back, as no one reads it.
                let padding = framed - data.readableBytes
                connectionReceiveWindow += padding
                appendFrame(type: 8, flags: 0, streamID: .rootStream, promise: nil) { $0.writeInteger(UInt32(padding)) }
            }
            let endStream = flags & 0x1 != 0
            if endStream { endRemotely(streamID) }
            context.fireChannelRead(wrapInboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(data), endStream: endStream)))))
            if endStream { unparkWithinLimit(context: context) }
        case 1:  // HEADERS
            guard !onRootStream else { return connectionError(.protocolError, "HEADERS on stream 0", context: context) }
            guard var fragment = Self.unpad(&payload, flags: flags) else { return connectionError(.protocolError, "bad HEADERS padding", context: context) }
            if flags & 0x20 != 0 {  // PRIORITY: dependency and weight, not used by a client
                guard fragment.readableBytes >= 5 else { return connectionError(.frameSizeError, "short HEADERS priority", context: context) }
                fragment.moveReaderIndex(forwardBy: 5)
            }
            headerBlock = (streamID, flags & 0x1 != 0, fragment)
            if flags & 0x4 != 0 { finishHeaderBlock(context: context) }
        case 2:  // PRIORITY
            guard !onRootStream else { return connectionError(.protocolError, "PRIORITY on stream 0", context: context) }
            guard payload.readableBytes == 5 else { return connectionError(.frameSizeError, "PRIORITY of \(payload.readableBytes) bytes", context: context) }
        case 3:  // RST_STREAM
            guard !onRootStream else { return connectionError(.protocolError, "RST_STREAM on stream 0", context: context) }
            guard let code = payload.readInteger(as: UInt32.self), payload.readableBytes == 0 else {
                return connectionError(.frameSizeError, "RST_STREAM not 4 bytes", context: context)
            }
            closeStream(streamID)
            context.fireChannelRead(wrapInboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(HTTP2ErrorCode(networkCode: Int(code))))))
            unparkWithinLimit(context: context)
        case 4:  // SETTINGS
            guard onRootStream else { return connectionError(.protocolError, "SETTINGS on a stream", context: context) }
            if flags & 0x1 != 0 {
                guard payload.readableBytes == 0 else { return connectionError(.frameSizeError, "SETTINGS ACK with a payload", context: context) }
                return
            }
            guard payload.readableBytes % 6 == 0 else { return connectionError(.frameSizeError, "SETTINGS not a multiple of 6 bytes", context: context) }
            var settings: [HTTP2Setting] = []
            while let id = payload.readInteger(as: UInt16.self), let value = payload.readInteger(as: UInt32.self) {
                if let (code, reason) = apply(setting: id, value: Int(value)) { return connectionError(code, reason, context: context) }
                settings.append(HTTP2Setting(parameter: HTTP2SettingsParameter(extensionSetting: Int(id)), value: Int(value)))
            }
            sawServerSettings = true
            appendFrame(type: 4, flags: 0x1, streamID: .rootStream, promise: nil) { _ in }
            context.fireChannelRead(wrapInboundOut(HTTP2Frame(streamID: .rootStream, payload: .settings(.settings(settings)))))
            sendBlockedData()
            unparkWithinLimit(context: context)
        case 5:  // PUSH_PROMISE
            return connectionError(.protocolError, "PUSH_PROMISE, refused by SETTINGS_ENABLE_PUSH 0", context: context)
        case 6:  // PING
            guard onRootStream else { return connectionError(.protocolError, "PING on a stream", context: context) }
            guard let opaque = payload.readInteger(as: UInt64.self), payload.readableBytes == 0 else {
                return connectionError(.frameSizeError, "PING not 8 bytes", context: context)
            }
            let ack = flags & 0x1 != 0
            if !ack { appendFrame(type: 6, flags: 0x1, streamID: .rootStream, promise: nil) { $0.writeInteger(opaque) } }
            context.fireChannelRead(wrapInboundOut(HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: opaque), ack: ack))))
        case 7:  // GOAWAY
            guard onRootStream else { return connectionError(.protocolError, "GOAWAY on a stream", context: context) }
            guard let last = payload.readInteger(as: UInt32.self), let code = payload.readInteger(as: UInt32.self) else {
                return connectionError(.frameSizeError, "GOAWAY under 8 bytes", context: context)
            }
            let lastStreamID = HTTP2StreamID(Int32(bitPattern: last & 0x7fff_ffff))
            goAwayLastStreamID = min(lastStreamID, goAwayLastStreamID ?? lastStreamID)
            // Streams past the server's last were never processed: none of their frames go out.
            for streamID in streams.keys where streamID > lastStreamID { closeStream(streamID) }
            let unsent = parked
            parked.removeAll()
            // The connection handler first, so it retires the connection before writes fail.
            context.fireChannelRead(
                wrapInboundOut(
                    HTTP2Frame(
                        streamID: .rootStream,
                        payload: .goAway(lastStreamID: lastStreamID, errorCode: HTTP2ErrorCode(networkCode: Int(code)), opaqueData: payload))))
            for entry in unsent { entry.promise?.fail(TransportFailure.notProcessed) }
        case 8:  // WINDOW_UPDATE
            guard let raw = payload.readInteger(as: UInt32.self), payload.readableBytes == 0 else {
                return connectionError(.frameSizeError, "WINDOW_UPDATE not 4 bytes", context: context)
            }
            let increment = Int(raw & 0x7fff_ffff)
            guard increment > 0 else { return connectionError(.protocolError, "WINDOW_UPDATE of 0", context: context) }
            if onRootStream {
                connectionSendWindow += increment
                guard connectionSendWindow <= Self.maximumWindow else { return connectionError(.flowControlError, "connection window past 2^31-1", context: context) }
            } else if let index = streams.index(forKey: streamID) {
                streams.values[index].sendWindow += increment
                guard streams.values[index].sendWindow <= Self.maximumWindow else {
                    return connectionError(.flowControlError, "stream window past 2^31-1", context: context)
                }
            }
            if !blocked.isEmpty {
                sendBlockedData()
                unparkWithinLimit(context: context)
            }
        case 9:  // CONTINUATION
            guard var block = headerBlock else { return connectionError(.protocolError, "CONTINUATION without HEADERS", context: context) }
            guard block.fragment.readableBytes + payload.readableBytes <= Self.maximumHeaderBlock else {
                return connectionError(.enhanceYourCalm, "a header block over \(Self.maximumHeaderBlock) bytes", context: context)
            }
            headerBlock = nil  // so the fragment is uniquely referenced as it grows
            block.fragment.writeBuffer(&payload)
            headerBlock = block
            if flags & 0x4 != 0 { finishHeaderBlock(context: context) }
        default:
            break  // unknown frame types are ignored (RFC 9113 §4.1)
        }
    }

    private func finishHeaderBlock(context: ChannelHandlerContext) {
        guard var block = headerBlock else { return }
        headerBlock = nil
        // Every block is decoded, a stream's or not, to keep the HPACK table in step with the server's.
        let headers: HPACKHeaders
        do {
            headers = try decoder.decodeHeaders(from: &block.fragment)
        } catch {
            return connectionError(.compressionError, "header block does not decode: \(error)", context: context)
        }
        if block.endStream { endRemotely(block.streamID) }
        context.fireChannelRead(wrapInboundOut(HTTP2Frame(streamID: block.streamID, payload: .headers(.init(headers: headers, endStream: block.endStream)))))
        if block.endStream { unparkWithinLimit(context: context) }
    }

    /// Applies one of the server's settings; a connection error's code and reason if it is invalid.
    private func apply(setting: UInt16, value: Int) -> (HTTP2ErrorCode, String)? {
        switch setting {
        case 1:  // HEADER_TABLE_SIZE: the encoder's table, never above the default
            encoder.setMaximumTableSize(value)
        case 2:  // ENABLE_PUSH
            if value != 0 { return (.protocolError, "a server's SETTINGS_ENABLE_PUSH must be 0") }
        case 3:  // MAX_CONCURRENT_STREAMS
            peerMaxStreams = value
        case 4:  // INITIAL_WINDOW_SIZE: changes the window of every open stream by the difference
            guard value <= Self.maximumWindow else { return (.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE past 2^31-1") }
            let delta = value - peerInitialWindow
            peerInitialWindow = value
            for index in streams.indices { streams.values[index].sendWindow += delta }
            if streams.values.contains(where: { $0.sendWindow > Self.maximumWindow }) {
                return (.flowControlError, "a stream window past 2^31-1")
            }
        case 5:  // MAX_FRAME_SIZE
            guard (16_384...16_777_215).contains(value) else { return (.protocolError, "SETTINGS_MAX_FRAME_SIZE \(value) out of range") }
            peerMaxFrameSize = value
        default:
            break
        }
        return nil
    }

    /// The payload without its padding (PADDED flag); nil if the padding is longer than the frame.
    private static func unpad(_ payload: inout ByteBuffer, flags: UInt8) -> ByteBuffer? {
        guard flags & 0x8 != 0 else { return payload }
        guard let padding = payload.readInteger(as: UInt8.self), Int(padding) <= payload.readableBytes else { return nil }
        return payload.readSlice(length: payload.readableBytes - Int(padding))
    }

    func channelInactive(context: ChannelHandlerContext) {
        failed = true
        let promises = blocked.compactMap(\.promise) + parked.compactMap(\.promise) + [outputPromise].compactMap { $0 }
        blocked.removeAll()
        parked.removeAll()
        streams.removeAll()
        outputPromise = nil
        output = nil
        for promise in promises { promise.fail(ChannelError.ioOnClosedChannel) }
        context.fireChannelInactive()
    }

    // MARK: Streams

    /// The server ended the stream; closed if this side had too.
    private func endRemotely(_ streamID: HTTP2StreamID) {
        guard let index = streams.index(forKey: streamID) else { return }
        if streams.values[index].localEnded {
            closeStream(streamID)
        } else {
            streams.values[index].remoteEnded = true
        }
    }

    /// Forgets a stream and fails the DATA it still had waiting.
    private func closeStream(_ streamID: HTTP2StreamID) {
        guard let stream = streams.removeValue(forKey: streamID), stream.blockedEntries > 0 else { return }
        for held in Self.remove(streamID, from: &blocked) { held.fail(TransportFailure.connectionClosed) }
    }

    /// Takes a stream's writes out of `queue`, the others kept in order; their promises, failed
    /// by the caller once the queue is whole again (a failure may write re-entrantly).
    private static func remove<Held: HeldWrite>(_ streamID: HTTP2StreamID, from queue: inout CircularBuffer<Held>) -> [EventLoopPromise<Void>] {
        var removed: [EventLoopPromise<Void>] = []
        for _ in 0..<queue.count {
            let held = queue.removeFirst()
            if held.streamID != streamID {
                queue.append(held)
            } else if let promise = held.promise {
                removed.append(promise)
            }
        }
        return removed
    }

    /// Opens parked streams while the server's limit allows.
    private func unparkWithinLimit(context: ChannelHandlerContext) {
        while !failed, sawServerSettings, let head = parked.first, streams[head.streamID] != nil || streams.count < peerMaxStreams {
            parked.removeFirst()
            writeOnStream(head.write, promise: head.promise, context: context)
        }
    }

    // MARK: Output

    private func takeOutput(promise: EventLoopPromise<Void>?) -> ByteBuffer {
        addOutputPromise(promise)
        let out = output ?? context!.channel.allocator.buffer(capacity: 512)
        output = nil
        return out
    }

    private func addOutputPromise(_ promise: EventLoopPromise<Void>?) {
        guard let promise else { return }
        if let outputPromise { outputPromise.futureResult.cascade(to: promise) } else { outputPromise = promise }
    }

    private func appendFrame(type: UInt8, flags: UInt8, streamID: HTTP2StreamID, promise: EventLoopPromise<Void>?, payload: (inout ByteBuffer) -> Void) {
        var out = takeOutput(promise: promise)
        let start = out.writerIndex
        out.writeRepeatingByte(0, count: 9)
        payload(&out)
        Self.setFrameHeader(&out, at: start, length: out.writerIndex - start - 9, type: type, flags: flags, streamID: streamID)
        output = out
    }

    /// Ends the connection for a protocol violation: GOAWAY with the code, then close.
    private func connectionError(_ code: HTTP2ErrorCode, _ reason: String, context: ChannelHandlerContext) {
        guard !failed else { return }
        appendFrame(type: 7, flags: 0, streamID: .rootStream, promise: nil) {
            $0.writeInteger(UInt32(0))
            $0.writeInteger(UInt32(code.networkCode))
        }
        flush(context: context)
        failed = true
        context.fireErrorCaught(TransportFailure.protocolError("HTTP/2: \(reason)"))
        context.close(promise: nil)
    }

    static func setFrameHeader(_ out: inout ByteBuffer, at index: Int, length: Int, type: UInt8, flags: UInt8, streamID: HTTP2StreamID) {
        out.setInteger(UInt8(truncatingIfNeeded: length >> 16), at: index)
        out.setInteger(UInt16(truncatingIfNeeded: length), at: index + 1)
        out.setInteger(type, at: index + 3)
        out.setInteger(flags, at: index + 4)
        out.setInteger(UInt32(Int32(streamID)), at: index + 5)
    }

    static func writeFrameHeader(_ out: inout ByteBuffer, length: Int, type: UInt8, flags: UInt8, streamID: HTTP2StreamID) {
        let start = out.writerIndex
        out.writeRepeatingByte(0, count: 9)
        setFrameHeader(&out, at: start, length: length, type: type, flags: flags, streamID: streamID)
    }
}
