import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldSimulatorSupport
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

    /// The control API: `GET /stats`, `GET /notifications?token=`, `POST /faults`, `POST /tokens`,
    /// `POST /reset`.
    static func answer(_ call: SimulatorControlCall, state: SimulatorState) -> SimulatorControlAnswer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = Data(call.body)
        switch (call.method, call.path) {
        case ("GET", "/stats"):
            return SimulatorControlAnswer(status: 200, json: (try? String(decoding: encoder.encode(state.stats), as: UTF8.self)) ?? "{}")
        case ("GET", "/notifications"):
            let list = state.notifications(token: call.query["token"])
            let data = (try? encoder.encode(["notifications": list])) ?? Data("{}".utf8)
            return SimulatorControlAnswer(status: 200, json: String(decoding: data, as: UTF8.self))
        case ("POST", "/faults"):
            do {
                let fault = try JSONDecoder().decode(SimulatorFault.self, from: body).validated()
                let id = state.addFault(fault)
                return SimulatorControlAnswer(status: 201, json: #"{"id":\#(id)}"#)
            } catch let error as FaultError {
                return .error(400, error.description)
            } catch {
                return .error(400, "not a fault: \(error)")
            }
        case ("POST", "/tokens"):
            // `{"environment": "production" | "sandbox", "token": optional hex}`: a device token of
            // that environment (the one given, or a new one), as Apple issues one to a build.
            guard let request = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
                let environment = (request["environment"] as? String).flatMap(APNsEnvironment.init(rawValue:))
            else { return .error(400, "environment is production or sandbox") }
            let token: String
            if let given = request["token"] as? String {
                guard APNsDeviceToken.isAppleLength(Substring(given)) else { return .error(400, "token is 64 hex characters") }
                token = given.lowercased()
                state.assign(token: token, to: environment)
            } else {
                token = state.issueToken(environment: environment)
            }
            return SimulatorControlAnswer(status: 201, json: #"{"environment":"\#(environment.rawValue)","token":"\#(token)"}"#)
        case ("POST", "/reset"):
            state.reset()
            return SimulatorControlAnswer(status: 200, json: #"{"reset":true}"#)
        default:
            return .error(404, "no route \(call.method) \(call.path)")
        }
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
            let components = URLComponents(string: head.uri)
            var query: [String: String] = [:]
            for item in components?.queryItems ?? [] where query[item.name] == nil { query[item.name] = item.value ?? "" }
            let answer = SimulatorControlServer.answer(
                SimulatorControlCall(method: head.method.rawValue, path: components?.path ?? head.uri, query: query, body: Array(body.readableBytesView)),
                state: state)
            var headers = HTTPHeaders()
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "content-length", value: String(answer.json.utf8.count))
            let status = HTTPResponseStatus(statusCode: answer.status)
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: answer.json)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            self.head = nil
        }
    }
}
