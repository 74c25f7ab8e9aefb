import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdHTTP2
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle

/// The two listeners of an HTTP push-service simulator (FCM, Web Push): the service over TLS
/// (HTTP/2 or HTTP/1.1, as ALPN settles) and a plain-HTTP control port.
package struct SimulatorListeners: Sendable {
    package let port: Int
    package let controlPort: Int
    /// Both servers, shut down gracefully together.
    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    /// The two listening sockets.
    private let channels: [any Channel]

    /// Whether both still listen.
    package var isListening: Bool { channels.allSatisfy(\.isActive) }

    /// Starts both and returns once both are bound (port 0 picks a free one).
    /// - Parameter http2: offer HTTP/2 beside HTTP/1.1 (ALPN); false serves HTTP/1.1 alone, as a
    ///   small push service may (Hummingbird's HTTP/2 server always offers `h2`, whatever `tls` says).
    package static func start(
        api: Router<BasicRequestContext>, control: Router<BasicRequestContext>, tls: TLSConfiguration, http2: Bool = true, host: String, port: Int,
        controlPort: Int, name: String, logger: Logger
    ) async throws -> SimulatorListeners {
        let apiBound = AsyncStream<any Channel>.makeStream()
        let controlBound = AsyncStream<any Channel>.makeStream()
        let apiApp = Application(
            router: api, server: http2 ? try .http2Upgrade(tlsConfiguration: tls) : try .tls(.http1(), tlsConfiguration: tls),
            configuration: .init(address: .hostname(host, port: port), serverName: name),
            onServerRunning: { channel in
                apiBound.continuation.yield(channel)
                apiBound.continuation.finish()
            },
            logger: logger)
        let controlApp = Application(
            router: control,
            configuration: .init(address: .hostname(host, port: controlPort), serverName: name + "-control"),
            onServerRunning: { channel in
                controlBound.continuation.yield(channel)
                controlBound.continuation.finish()
            },
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [apiApp, controlApp], logger: logger))
        let task = Task {
            do {
                try await group.run()
            } catch {
                // A port that cannot be bound: whoever waits for it learns now, not never.
                apiBound.continuation.finish()
                controlBound.continuation.finish()
                throw error
            }
        }
        var apiPorts = apiBound.stream.makeAsyncIterator()
        var controlPorts = controlBound.stream.makeAsyncIterator()
        guard let apiChannel = await apiPorts.next(), let controlChannel = await controlPorts.next() else {
            task.cancel()
            try await task.value
            throw CancellationError()
        }
        return SimulatorListeners(
            port: apiChannel.localAddress?.port ?? 0, controlPort: controlChannel.localAddress?.port ?? 0, group: group, task: task,
            channels: [apiChannel, controlChannel])
    }

    /// Stops both servers gracefully (no error lines for a clean stop); a connection still open
    /// after two seconds is cut.
    package func shutdown() async {
        await group.triggerGracefulShutdown()
        let deadline = Task { [task] in
            try await Task.sleep(for: .seconds(2))
            task.cancel()
        }
        _ = try? await task.value
        deadline.cancel()
    }

    /// A JSON answer.
    package static func json(_ status: HTTPResponse.Status, _ text: String, contentType: String = "application/json") -> Response {
        Response(status: status, headers: [.contentType: contentType], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// A value as JSON with sorted keys (`{}` if it cannot be encoded).
    package static func encode(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
