import NIOCore

/// Sits between TLS and HTTP/2 and decides when HTTP/2's flushes reach the socket.
///
/// The connection handler flushes HTTP/2 after every stream, so NIOHTTP2 writes each stream's
/// DATA right behind its HEADERS: DATA that NIOHTTP2 releases for several streams at once comes
/// out in no particular order, and a server that has sent GOAWAY may stop reading at DATA for a
/// stream past its last one (NIOHTTP2's server does), stranding the DATA of earlier streams behind
/// it. This handler then lets those flushes share one TLS record and one write: flushes during a
/// read wait for the read's end, and flushes a busy connection asks to hold wait for the event
/// loop's turn (or the read under way) to end, in slices of `flushesPerWrite` so a long burst
/// starts going out at once.
final class SocketFlushCoalescer: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = IOData

    /// Held flushes past this many go out at once: 500 streams opened in one turn once kept all
    /// of them off the wire for the 3 s it took a loaded machine to encode them.
    static let flushesPerWrite = 64

    private var context: ChannelHandlerContext?
    private var reading = false
    private var holdingForTurn = false
    private var heldFlushes = 0
    private var flushByTurnEnd = false

    init() {}

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Until the event loop's turn ends, flushes wait and go out together. Must run on the loop.
    func holdUntilTurnEnds() {
        guard !holdingForTurn, let context else { return }
        holdingForTurn = true
        scheduleTurnEnd(context: context)
    }

    func flush(context: ChannelHandlerContext) {
        guard reading || holdingForTurn else { return context.flush() }
        // By the turn's end at the latest, should the read under way not complete.
        scheduleTurnEnd(context: context)
        heldFlushes += 1
        if heldFlushes >= Self.flushesPerWrite { flushHeld(context: context) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reading = true
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
        reading = false
        flushHeld(context: context)
    }

    private func scheduleTurnEnd(context: ChannelHandlerContext) {
        guard !flushByTurnEnd else { return }
        flushByTurnEnd = true
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (coalescer, context) = loopBound.value
            coalescer.flushByTurnEnd = false
            coalescer.holdingForTurn = false
            coalescer.flushHeld(context: context)
        }
    }

    private func flushHeld(context: ChannelHandlerContext) {
        guard heldFlushes > 0 else { return }
        heldFlushes = 0
        context.flush()
    }
}
