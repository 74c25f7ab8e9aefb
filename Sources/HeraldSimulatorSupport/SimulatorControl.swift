import Foundation
package import Hummingbird

/// A call to a simulator's control API (`GET /stats`, `POST /faults`, …), whichever listener
/// carried it: the simulator's own control port (`herald mock-*`) or, for the simulators built
/// into `herald serve`, Herald's admin listener.
public struct SimulatorControlCall: Sendable {
    /// `GET`, `POST`, …
    public var method: String
    /// The path within the control API: `/stats`.
    public var path: String
    /// The query parameters (the first of each name).
    public var query: [String: String]
    public var body: [UInt8]

    public init(method: String, path: String, query: [String: String] = [:], body: [UInt8] = []) {
        (self.method, self.path, self.query, self.body) = (method, path, query, body)
    }
}

/// A control API's answer: a status and a JSON body.
public struct SimulatorControlAnswer: Sendable, Hashable {
    public var status: Int
    public var json: String

    public init(status: Int, json: String) { (self.status, self.json) = (status, json) }

    /// `{"error": message}` with `status`.
    public static func error(_ status: Int, _ message: String) -> SimulatorControlAnswer {
        let data = (try? JSONSerialization.data(withJSONObject: ["error": message])) ?? Data()
        return SimulatorControlAnswer(status: status, json: String(decoding: data, as: UTF8.self))
    }
}

extension SimulatorListeners {
    /// A router that hands every control request to `answer`, for a control port of its own.
    package static func controlRouter(
        _ answer: @escaping @Sendable (SimulatorControlCall) async -> SimulatorControlAnswer
    ) -> Router<BasicRequestContext> {
        let router = Router()
        for method in [HTTPRequest.Method.get, .post] {
            router.on("/**", method: method) { request, _ -> Response in
                let body = try await request.body.collect(upTo: 65_536)
                var query: [String: String] = [:]
                for (name, value) in request.uri.queryParameters where query[String(name)] == nil { query[String(name)] = String(value) }
                let answer = await answer(SimulatorControlCall(method: method.rawValue, path: request.uri.path, query: query, body: Array(buffer: body)))
                return json(HTTPResponse.Status(code: answer.status), answer.json)
            }
        }
        return router
    }
}
