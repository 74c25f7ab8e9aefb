import Foundation
import HeraldDelivery
import HeraldServer
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
}
