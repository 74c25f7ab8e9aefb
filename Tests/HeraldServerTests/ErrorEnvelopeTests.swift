import Foundation
@testable import HeraldServer
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Testing

@Suite("The router's answers in Herald's envelope")
struct ErrorEnvelopeTests {
    @Test("a served path asked with another method is 405 with Allow; a path Herald does not serve is 404; both in the error envelope")
    func unmatchedRequests() async throws {
        try await withRegistrationServer { client, _ in
            for (method, path, allow) in [
                (HTTPRequest.Method.delete, "/v1/push/register", "POST"), (.get, "/apps/kasia/apns/register", "POST"),
                (.post, "/healthz", "GET"), (.get, "/v1/events:batch", "POST"), (.post, "/v1/push/unregister", "DELETE"),
            ] {
                let response = try await send(client, method, path)
                #expect(response.status == .methodNotAllowed, "\(method) \(path)")
                #expect(response.headers[.allow] == allow, "\(method) \(path)")
                let error = try #require(try json(response)["error"] as? [String: Any])
                #expect(error["code"] as? String == "method_not_allowed")
                #expect((error["message"] as? String)?.contains(allow) == true)
            }
            for path in ["/v2/events", "/apps/kasia/nothing", "/v1/push/register/extra", "/"] {
                let response = try await send(client, .get, path)
                #expect(response.status == .notFound, "\(path)")
                #expect(response.headers[.allow] == nil)
                let error = try #require(try json(response)["error"] as? [String: Any], "\(path)")
                #expect(error["code"] as? String == "not_found")
                #expect(!(error["message"] as? String ?? "").contains("admin listener"), "\(path)")
            }
            // A route's own answers are untouched.
            #expect(try await send(client, .get, "/healthz").status == .ok)
            let refused = try await send(client, .post, "/v1/push/register", "{}")
            #expect(refused.status == .badRequest)
            #expect((try json(refused)["error"] as? [String: Any])?["code"] as? String == "missing_field")
        }
    }

    @Test("an error nobody expected is a 500 in the envelope, its text not sent")
    func unexpected() async throws {
        struct Secret: Error, CustomStringConvertible { var description: String { "db password is hunter2" } }
        let router = Router()
        let served = ServedRoutes()
        router.add(middleware: ErrorEnvelopeMiddleware(routes: served))
        router.get("/boom") { _, _ -> String in throw Secret() }
        served.fill(router.routes.map { ($0.method.rawValue, "\($0.path)") })
        try await Application(router: router).test(.router) { client in
            let response = try await client.execute(uri: "/boom", method: .get)
            #expect(response.status == .internalServerError)
            let body = String(buffer: response.body)
            #expect(body.contains(#""code":"internal_error""#))
            #expect(!body.contains("hunter2"))
        }
    }
}
