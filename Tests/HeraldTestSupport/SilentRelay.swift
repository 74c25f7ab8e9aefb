import NIOCore
import NIOPosix
import Synchronization

/// A TCP relay in front of a server that can go silent: after `silence()` no connection it holds
/// passes another byte or its close, for good (a peer behind a partition, or a connection left
/// half-open by a server restart), and connections it accepts are silent too until `resume()`.
public final class SilentRelay: Sendable {
    /// The port it listens on (127.0.0.1).
    public let port: Int
    private let listener: any Channel
    private let state: Shared

    private final class Shared: Sendable {
        let mutex = Mutex(State())
        func withLock<R>(_ body: (inout State) -> R) -> R { mutex.withLock { body(&$0) } }
    }

    private struct State {
        var accepted = 0
        /// Connections accepted before this index are silent for good.
        var silencedBefore = 0
        var silent = false
        var swallowedBytes = 0
    }

    /// Starts relaying 127.0.0.1:`port` on a port of its own.
    public static func start(to targetPort: Int) async throws -> SilentRelay {
        let state = Shared()
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelOption(ChannelOptions.autoRead, value: false)
            .childChannelInitializer { inbound in
                let index = state.withLock { s in
                    defer { s.accepted += 1 }
                    // Accepted while silent: never passes a byte.
                    if s.silent { s.silencedBefore = s.accepted + 1 }
                    return s.accepted
                }
                let passes: @Sendable (Int) -> Bool = { bytes in
                    state.withLock { s in
                        guard index < s.silencedBefore else { return true }
                        s.swallowedBytes += bytes
                        return false
                    }
                }
                let fromClient = RelayHandler(passes: passes)
                let fromServer = RelayHandler(passes: passes)
                return inbound.pipeline.addHandler(fromClient).flatMap {
                    ClientBootstrap(group: inbound.eventLoop)
                        .channelInitializer { $0.pipeline.addHandler(fromServer) }
                        .connect(host: "127.0.0.1", port: targetPort)
                        .flatMap { outbound in
                            fromClient.partner = outbound
                            fromServer.partner = inbound
                            return inbound.setOption(ChannelOptions.autoRead, value: true)
                        }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return SilentRelay(listener: listener, state: state)
    }

    private init(listener: any Channel, state: Shared) {
        self.listener = listener
        self.port = listener.localAddress?.port ?? 0
        self.state = state
    }

    /// Every connection held now, and every one accepted until `resume()`, goes silent for good.
    public func silence() {
        state.withLock { s in
            s.silent = true
            s.silencedBefore = s.accepted
        }
    }

    /// Connections accepted from now on pass bytes; the silenced ones stay silent.
    public func resume() {
        state.withLock { $0.silent = false }
    }

    /// Bytes silenced connections received and dropped (either way).
    public var swallowedBytes: Int { state.withLock { $0.swallowedBytes } }

    public func close() async {
        try? await listener.close()
    }
}

/// One direction of a relayed connection; both directions of a pair live on one event loop.
private final class RelayHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private let passes: @Sendable (Int) -> Bool
    var partner: (any Channel)?

    init(passes: @escaping @Sendable (Int) -> Bool) { self.passes = passes }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        guard passes(buffer.readableBytes) else { return }
        partner?.writeAndFlush(buffer, promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if passes(0) { partner?.close(promise: nil) }
        context.fireChannelInactive()
    }
}
