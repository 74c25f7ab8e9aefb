public import Foundation
import HeraldAPNs
public import HeraldAPNsCore
public import HeraldSimulatorSupport
public import Logging
public import NIOCore
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
    private let sandboxServer: Channel
    private let control: Channel?
    private let logger: Logger

    /// The bound HTTP/2 port of the production host (`api.push.apple.com`).
    public var port: Int { server.localAddress?.port ?? 0 }
    /// The bound HTTP/2 port of the sandbox host (`api.sandbox.push.apple.com`).
    public var sandboxPort: Int { sandboxServer.localAddress?.port ?? 0 }
    /// The bound control port; nil when it has none (`controlPort` nil: another listener carries
    /// `control(_:)`, as Herald's admin listener does for the built-in simulator).
    public var controlPort: Int? { control.map { $0.localAddress?.port ?? 0 } }

    /// The control API (`GET /stats`, `POST /faults`, …), for whichever listener carries it.
    public func control(_ call: SimulatorControlCall) async -> SimulatorControlAnswer {
        SimulatorControlServer.answer(call, state: state)
    }
    /// `https://host:port`: where clients send production pushes.
    public var url: URL { url(for: .production) }

    /// Where clients send the pushes of `environment`: each environment has its host, as Apple's do.
    public func url(for environment: APNsEnvironment) -> URL {
        URL(string: "https://\(configuration.host):\(environment == .production ? port : sandboxPort)")!
    }

    private init(
        configuration: APNsSimulatorConfiguration, tls: SimulatorTLSIdentity, state: SimulatorState,
        group: EventLoopGroup, server: Channel, sandboxServer: Channel, control: Channel?, logger: Logger
    ) {
        self.configuration = configuration
        self.tls = tls
        self.state = state
        self.group = group
        self.server = server
        self.sandboxServer = sandboxServer
        self.control = control
        self.logger = logger
    }

    /// Starts listening on the production, sandbox and control ports.
    public static func start(
        configuration: APNsSimulatorConfiguration,
        eventLoopGroup: EventLoopGroup,
        logger: Logger = Logger(label: "herald.mock-apns")
    ) async throws -> APNsSimulator {
        let tls = try SimulatorTLSIdentity.generate(host: configuration.host)
        let sslContext = try tls.makeServerContext()
        let state = SimulatorState(configuration: configuration)
        let server = try await listen(
            .production, port: configuration.port, configuration: configuration, state: state, sslContext: sslContext, group: eventLoopGroup)
        let sandboxServer: Channel
        let control: Channel?
        do {
            sandboxServer = try await listen(
                .sandbox, port: configuration.sandboxPort, configuration: configuration, state: state, sslContext: sslContext,
                group: eventLoopGroup)
        } catch {
            try? await server.close()
            throw error
        }
        do {
            if let port = configuration.controlPort {
                control = try await SimulatorControlServer.bind(host: configuration.host, port: port, state: state, group: eventLoopGroup)
            } else {
                control = nil
            }
        } catch {
            try? await server.close()
            try? await sandboxServer.close()
            throw error
        }
        return APNsSimulator(
            configuration: configuration, tls: tls, state: state, group: eventLoopGroup, server: server,
            sandboxServer: sandboxServer, control: control, logger: logger)
    }

    /// One environment's HTTP/2 listener.
    private static func listen(
        _ environment: APNsEnvironment, port: Int, configuration: APNsSimulatorConfiguration, state: SimulatorState,
        sslContext: NIOSSLContext, group eventLoopGroup: EventLoopGroup
    ) async throws -> Channel {
        try await ServerBootstrap(group: eventLoopGroup)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let connection = SimulatorConnection(state: state, channel: channel, environment: environment)
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
                    try sync.addHandler(SimulatorGoAwayReader(connection: connection))
                }
            }
            .bind(host: configuration.host, port: port).get()
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

    /// A new device token of `environment`, as Apple issues one to an app built for it: pushed
    /// on the other environment's host, it is refused with BadDeviceToken.
    public func issueToken(environment: APNsEnvironment) -> String { state.issueToken(environment: environment) }

    /// Says which environment `token` belongs to (a token never named here is taken on either host).
    public func assign(token: String, to environment: APNsEnvironment) { state.assign(token: token, to: environment) }

    /// Whether it still listens (its service and control ports).
    public var isListening: Bool { server.isActive && sandboxServer.isActive && control?.isActive != false }

    /// Stops listening; open connections close.
    public func shutdown() async {
        try? await server.close()
        try? await sandboxServer.close()
        try? await control?.close()
    }
}
