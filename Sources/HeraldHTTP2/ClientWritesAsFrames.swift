import NIOCore
import NIOHPACK
import NIOHTTP2

/// The connection handler's writes as NIOHTTP2's frames, for a connection framed by
/// `NIOHTTP2Handler` (Web Push, whose origins are untrusted): a request becomes its HEADERS
/// (the pseudo-headers merged into its header list, as `HTTP2ClientFramer` encodes them), then
/// its DATA; any other frame passes as it is.
final class ClientWritesAsFrames: ChannelOutboundHandler {
    typealias OutboundIn = HTTP2ClientWrite
    typealias OutboundOut = HTTP2Frame

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .frame(let frame): context.write(wrapOutboundOut(frame), promise: promise)
        case .request(let request):
            let headers = HTTP2Frame(streamID: request.streamID, payload: .headers(.init(headers: request.allHeaders, endStream: request.body == nil)))
            context.write(wrapOutboundOut(headers), promise: promise)
            if let body = request.body {
                let data = HTTP2Frame(streamID: request.streamID, payload: .data(.init(data: .byteBuffer(body), endStream: true)))
                context.write(wrapOutboundOut(data), promise: nil)
            }
        }
    }
}
