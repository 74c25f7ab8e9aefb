import Foundation
package import HTTPTypes
package import Hummingbird
import HummingbirdHTTP2
import HummingbirdTLS
package import Logging
import NIOCore
package import NIOSSL
import ServiceLifecycle

/// The two listeners of an HTTP push-service simulator (FCM, Web Push): the service over TLS
/// (HTTP/2 or HTTP/1.1, as ALPN settles) and a plain-HTTP control port.
package struct SimulatorListeners: Sendable {
    package let port: Int
    /// nil when the control API has no port of its own.
    package let controlPort: Int?
    /// Both servers, shut down gracefully together.
    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    /// The listening sockets.
    private let channels: [any Channel]

    /// Whether all still listen.
    package var isListening: Bool { channels.allSatisfy(\.isActive) }

    /// Starts the service, and the control API on a port of its own when `controlPort` is given,
    /// and returns once both are bound (port 0 picks a free one).
    /// - Parameter http2: offer HTTP/2 beside HTTP/1.1 (ALPN); false serves HTTP/1.1 alone, as a
    ///   small push service may (Hummingbird's HTTP/2 server always offers `h2`, whatever `tls` says).
    package static func start(
        api: Router<BasicRequestContext>, control: @escaping @Sendable (SimulatorControlCall) async -> SimulatorControlAnswer,
        tls: TLSConfiguration, http2: Bool = true, host: String, port: Int, controlPort: Int?, name: String, logger: Logger
    ) async throws -> SimulatorListeners {
        var services: [any Service] = []
        var bound: [AsyncStream<any Channel>] = []
        var finishers: [@Sendable () -> Void] = []
        func listening(_ configure: (@escaping @Sendable (any Channel) async -> Void) throws -> any Service) rethrows {
            let stream = AsyncStream<any Channel>.makeStream()
            services.append(try configure { channel in
                stream.continuation.yield(channel)
                stream.continuation.finish()
            })
            bound.append(stream.stream)
            finishers.append { stream.continuation.finish() }
        }
        try listening { onRunning in
            Application(
                router: api, server: http2 ? try .http2Upgrade(tlsConfiguration: tls) : try .tls(.http1(), tlsConfiguration: tls), configuration: .init(address: .hostname(host, port: port), serverName: name),
                onServerRunning: onRunning, logger: logger)
        }
        if let controlPort {
            listening { onRunning in
                Application(
                    router: controlRouter(control), configuration: .init(address: .hostname(host, port: controlPort), serverName: name + "-control"),
                    onServerRunning: onRunning, logger: logger)
            }
        }
        let group = ServiceGroup(configuration: .init(services: services, logger: logger))
        let unblock = finishers
        let task = Task {
            do {
                try await group.run()
            } catch {
                // A port that cannot be bound: whoever waits for it learns now, not never.
                for finish in unblock { finish() }
                throw error
            }
        }
        var channels: [any Channel] = []
        for stream in bound {
            var iterator = stream.makeAsyncIterator()
            guard let channel = await iterator.next() else {
                task.cancel()
                try await task.value
                throw CancellationError()
            }
            channels.append(channel)
        }
        return SimulatorListeners(
            port: channels[0].localAddress?.port ?? 0, controlPort: channels.count > 1 ? channels[1].localAddress?.port ?? 0 : nil,
            group: group, task: task, channels: channels)
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
