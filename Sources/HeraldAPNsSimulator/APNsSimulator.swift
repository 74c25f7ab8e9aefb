import Foundation
import HeraldAPNs
import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL

/// An APNs look-alike: HTTP/2 over TLS checking what Apple checks, with fault injection
/// and a plain-HTTP control port (`GET /stats`, `GET /notifications?token=`,
/// `POST /faults`, `POST /reset`).
public final class APNsSimulator: Sendable {
    public let configuration: APNsSimulatorConfiguration
    public let tls: SimulatorTLSIdentity
    let state: SimulatorState
    private let group: EventLoopGroup
    private let server: Channel
    private let control: Channel
    private let logger: Logger

    /// The bound HTTP/2 port.
    public var port: Int { server.localAddress?.port ?? 0 }
    /// The bound control port.
    public var controlPort: Int { control.localAddress?.port ?? 0 }
    /// `https://host:port`: where clients send.
    public var url: URL { URL(string: "https://\(configuration.host):\(port)")! }

    private init(
        configuration: APNsSimulatorConfiguration, tls: SimulatorTLSIdentity, state: SimulatorState,
        group: EventLoopGroup, server: Channel, control: Channel, logger: Logger
    ) {
        self.configuration = configuration
        self.tls = tls
        self.state = state
        self.group = group
        self.server = server
        self.control = control
        self.logger = logger
    }

    /// Starts listening on both ports.
    public static func start(
        configuration: APNsSimulatorConfiguration,
        eventLoopGroup: EventLoopGroup,
        logger: Logger = Logger(label: "herald.mock-apns")
    ) async throws -> APNsSimulator {
        let tls = try SimulatorTLSIdentity.generate()
        let sslContext = try tls.makeServerContext()
        let state = SimulatorState(configuration: configuration)

        let server = try await ServerBootstrap(group: eventLoopGroup)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let connection = SimulatorConnection(state: state, channel: channel)
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(SimulatorSocketHandler(connection: connection))
                    try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                    var settings = NIOHTTP2Handler.ConnectionConfiguration()
                    // Like APNs: one stream until the connection shows a valid provider token.
                    settings.initialSettings = [
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: 1),
                        HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),
                        HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
                    ]
                    // Every rejection and acceptance may change SETTINGS; the client acks each.
                    settings.controlFrameRateLimit.maximumCount = Int.max / 2
                    var streams = NIOHTTP2Handler.StreamConfiguration()
                    streams.targetWindowSize = 1 << 20
                    streams.streamResetFrameRateLimit.maximumCount = Int.max / 2
                    streams.streamErrorRateLimit.maximumCount = Int.max / 2
                    // Streams run on their connection's event loop, so they may share its state.
                    let loopBound = NIOLoopBound(connection, eventLoop: channel.eventLoop)
                    _ = try sync.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: settings, streamConfiguration: streams
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(SimulatorStreamHandler(connection: loopBound.value))
                        }
                    }
                }
            }
            .bind(host: configuration.host, port: configuration.port).get()

        let control: Channel
        do {
            control = try await SimulatorControlServer.bind(
                host: configuration.host, port: configuration.controlPort, state: state, group: eventLoopGroup)
        } catch {
            try? await server.close()
            throw error
        }
        return APNsSimulator(
            configuration: configuration, tls: tls, state: state, group: eventLoopGroup, server: server,
            control: control, logger: logger)
    }

    /// Writes `ca.pem` into `directory` and returns its path.
    @discardableResult
    public func writeCA(to directory: String) throws -> String {
        try tls.writeCA(to: directory)
    }

    /// Adds a fault; returns its id.
    @discardableResult
    public func inject(_ fault: SimulatorFault) throws -> Int {
        state.addFault(try fault.validated())
    }

    public var stats: SimulatorStats { state.stats }

    /// Accepted notifications, all or for one token.
    public func notifications(token: String? = nil) -> [RecordedNotification] {
        state.notifications(token: token)
    }

    /// Forgets notifications, faults and counters.
    public func reset() { state.reset() }

    /// Whether it still listens (its service and control ports).
    public var isListening: Bool { server.isActive && control.isActive }

    /// Stops listening; open connections close.
    public func shutdown() async {
        try? await server.close()
        try? await control.close()
    }
}
