import Foundation
import HeraldDelivery
@testable import HeraldServer
import HeraldStore
import Hummingbird
import HummingbirdTesting
import Testing

@Suite("OpenAPI document")
struct OpenAPITests {
    @Test("documents exactly the routes the gateway serves, and is served at /openapi.json")
    func coversRoutes() async throws {
        try await withRegistrationServer { client, store in
            let response = try await send(client, .get, "/openapi.json")
            #expect(response.status == .ok)
            let document = try json(response)
            #expect(document["openapi"] as? String == "3.1.0")
            let paths = try #require(document["paths"] as? [String: [String: Any]])
            let documented = Set(paths.flatMap { path, operations in operations.keys.map { "\($0.uppercased()) \(path)" } })
            let router = Gateway.router(store: store, configuration: APIConfiguration(), publisher: EventPublisher(store: store, apps: APIConfiguration().apps))
            let served = Set(router.routes.map { "\($0.method.rawValue) \($0.path)" })
            #expect(served == documented, "served but undocumented: \(served.subtracting(documented)); documented but not served: \(documented.subtracting(served))")
        }
    }

    @Test("every operation the rate limiter guards documents its 429")
    func rateLimitedDocumented() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: [String: Any]]])
        let guarded = RateLimits.registrationPaths + RateLimits.publishingPaths
        var checked = 0
        for (path, operations) in paths where guarded.contains(where: { path.hasSuffix($0) }) {
            for (method, operation) in operations {
                #expect((operation["responses"] as? [String: Any])?["429"] != nil, "\(method.uppercased()) \(path)")
                checked += 1
            }
        }
        #expect(checked == 18)
    }
}
