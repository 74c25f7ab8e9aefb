import Foundation
import HeraldAPNs
import NIOCore
import NIOHTTP1
import NIOPosix

/// The simulator's plain-HTTP/1.1 control port.
enum SimulatorControlServer {
    static func bind(host: String, port: Int, state: SimulatorState, group: EventLoopGroup) async throws -> Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(ControlHandler(state: state))
                }
            }
            .bind(host: host, port: port).get()
    }
}

private final class ControlHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let state: SimulatorState
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()

    init(state: SimulatorState) { self.state = state }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
        case .body(var chunk):
            body.writeBuffer(&chunk)
        case .end:
            guard let head else { return }
            let (status, json) = route(head)
            var headers = HTTPHeaders()
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "content-length", value: String(json.utf8.count))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: json)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            self.head = nil
        }
    }

    private func route(_ head: HTTPRequestHead) -> (HTTPResponseStatus, String) {
        let components = URLComponents(string: head.uri)
        let path = components?.path ?? head.uri
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        switch (head.method, path) {
        case (.GET, "/stats"):
            return (.ok, (try? String(decoding: encoder.encode(state.stats), as: UTF8.self)) ?? "{}")
        case (.GET, "/notifications"):
            let token = components?.queryItems?.first { $0.name == "token" }?.value
            let list = state.notifications(token: token)
            let data = (try? encoder.encode(["notifications": list])) ?? Data("{}".utf8)
            return (.ok, String(decoding: data, as: UTF8.self))
        case (.POST, "/faults"):
            do {
                let fault = try JSONDecoder().decode(SimulatorFault.self, from: Data(body.readableBytesView)).validated()
                let id = state.addFault(fault)
                return (.created, #"{"id":\#(id)}"#)
            } catch let error as FaultError {
                return (.badRequest, Self.error(error.description))
            } catch {
                return (.badRequest, Self.error("not a fault: \(error)"))
            }
        case (.POST, "/tokens"):
            // `{"environment": "production" | "sandbox", "token": optional hex}`: a device token of
            // that environment (the one given, or a new one), as Apple issues one to a build.
            guard let request = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
                let environment = (request["environment"] as? String).flatMap(APNsEnvironment.init(rawValue:))
            else { return (.badRequest, Self.error("environment is production or sandbox")) }
            let token: String
            if let given = request["token"] as? String {
                guard APNsDeviceToken.isAppleLength(Substring(given)) else { return (.badRequest, Self.error("token is 64 hex characters")) }
                token = given.lowercased()
                state.assign(token: token, to: environment)
            } else {
                token = state.issueToken(environment: environment)
            }
            return (.created, #"{"environment":"\#(environment.rawValue)","token":"\#(token)"}"#)
        case (.POST, "/reset"):
            state.reset()
            return (.ok, #"{"reset":true}"#)
        default:
            return (.notFound, Self.error("no route \(head.method) \(path)"))
        }
    }

    private static func error(_ message: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: ["error": message])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
