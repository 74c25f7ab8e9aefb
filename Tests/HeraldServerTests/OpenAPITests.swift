import Foundation
import HeraldCore
import HeraldDelivery
import HeraldMatrix
@testable import HeraldServer
import HeraldStore
import Hummingbird
import HummingbirdTesting
import Testing

@Suite("OpenAPI document")
struct OpenAPITests {
    @Test("documents exactly the routes the gateway serves, and is served at /openapi.json (with and without Matrix apps)",
          arguments: [nil, MatrixApps([MatrixApp(pattern: "im.example.ios", app: "default", kind: .apns)])])
    func coversRoutes(matrix: MatrixApps?) async throws {
        try await withRegistrationServer(matrix: matrix) { client, store in
            let response = try await send(client, .get, "/openapi.json")
            #expect(response.status == .ok)
            let document = try json(response)
            #expect(document["openapi"] as? String == "3.1.0")
            let paths = try #require(document["paths"] as? [String: [String: Any]])
            let documented = Set(paths.flatMap { path, operations in operations.keys.map { "\($0.uppercased()) \(path)" } })
            let router = Gateway.router(
                store: store, configuration: APIConfiguration(), publisher: EventPublisher(store: store, apps: APIConfiguration().apps), matrix: matrix,
                readMarkers: ReadMarkers(store: store, apps: APIConfiguration().apps, clock: SystemClock(), verifier: nil))
            let served = Set(router.routes.map { "\($0.method.rawValue) \($0.path)" })
            #expect(served == documented, "served but undocumented: \(served.subtracting(documented)); documented but not served: \(documented.subtracting(served))")
        }
    }

    @Test("the served document names this instance's apps and its watch-key and alias limits")
    func servedForTheInstance() throws {
        let served = OpenAPIDocument.served(apps: ["kasia", "ghosttalk"], maximumWatchKeys: 7, maximumAliases: 3)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(served.utf8)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        #expect(schemas["AppID"]?["enum"] as? [String] == ["kasia", "ghosttalk"])
        let common = try #require(schemas["RegistrationCommon"]?["properties"] as? [String: [String: Any]])
        for list in ["watched_addresses", "addresses", "contextual_routes"] {
            // Optional lists are nullable: the limit sits on the array branch.
            let branches = (common[list]?["anyOf"] as? [[String: Any]]) ?? [common[list] ?? [:]]
            #expect(branches.contains { $0["maxItems"] as? Int == 7 }, "\(list): \(common[list] ?? [:])")
        }
        #expect(((schemas["ContextualRoute"]?["properties"] as? [String: [String: Any]])?["aliases"])
            .map { ($0["anyOf"] as? [[String: Any]] ?? [$0]).contains { $0["maxItems"] as? Int == 3 } } == true)
        // The repo's copy names no app.
        let repo = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
        #expect((((repo["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])?["AppID"]?["enum"]) == nil)
    }

    @Test("a registration's subscription is documented for platform web only, as it is accepted: 422 elsewhere, null allowed")
    func subscriptionIsForWeb() async throws {
        // schemathesis found a schema-valid iOS registration with `"subscription": {}` refused (422):
        // the token platforms' branches, an added service's too, now say a subscription is null there.
        let served = OpenAPIDocument.served(apps: ["default"], maximumWatchKeys: 30, maximumAliases: 8, addedPlatforms: ["pager": #"{"type":"string"}"#])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(served.utf8)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        let branches = try #require(schemas["Registration"]?["oneOf"] as? [[String: Any]])
        var platforms: [String] = []
        for branch in branches {
            let parts = try #require(branch["allOf"] as? [[String: Any]])
            let properties = try #require(parts.compactMap { $0["properties"] as? [String: [String: Any]] }.first)
            let platform = try #require(properties["platform"]?["const"] as? String)
            platforms.append(platform)
            if platform == "web" {
                #expect(properties["subscription"]?["$ref"] as? String == "#/components/schemas/WebPushSubscription")
            } else {
                #expect(properties["subscription"]?["type"] as? String == "null", "\(platform): \(properties["subscription"] ?? [:])")
            }
        }
        #expect(platforms == ["ios", "android", "android", "web", "pager"])
        try await withRegistrationServer { client, _ in
            let refused = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["\#(kaspaA)"],"subscription":{}}"#)
            #expect(refused.status == .unprocessableContent)
            #expect((try json(refused)["error"] as? [String: Any])?["field"] as? String == "subscription")
            let accepted = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["\#(kaspaA)"],"subscription":null}"#)
            #expect(accepted.status == .ok, "\(String(buffer: accepted.body))")
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
        #expect(checked == 19)
    }

    /// Watch keys in every form a client may send: the API accepts exactly what the document's
    /// pattern allows, both ways (a combining mark or a lone modifier after the `:`, zero-width and
    /// bidi characters, any script, and the 256-scalar limit counted as the pattern counts it).
    @Test("a watch key is accepted exactly when the document's pattern matches it", arguments: [
        "user:\u{301}", "user:\u{1F3FB}", "user:e\u{301}", "user:\u{E9}", "conv:\u{200B}", "session:\u{200D}",
        "user:\u{202E}abc", "user:\u{FEFF}", "user:\u{A0}", "user:\u{85}", "user:\u{3000}", "user:日本語", "user:مرحبا",
        "conv:👩‍👩‍👧", "user:🏳️‍🌈", "user:" + String(repeating: "\u{301}", count: 256), "user:" + String(repeating: "\u{301}", count: 257),
        "user:" + String(repeating: "👩‍👩‍👧", count: 51), "user:" + String(repeating: "👩‍👩‍👧", count: 52),
        "user: x", "user:\u{7F}", "user:\u{1F}", "user:", "conv\u{301}:abc", "Conv:abc", "user:a:b", ":abc", "session:\t",
    ])
    func watchKeyAgreesWithPattern(key: String) throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any])
        let schemas = try #require((document["components"] as? [String: Any])?["schemas"] as? [String: [String: Any]])
        let branches = try #require(schemas["WatchKey"]?["anyOf"] as? [[String: Any]])
        let pattern = try #require(branches.compactMap { $0["pattern"] as? String }.first)
        // ICU's patterns, like JSON Schema's, match code points: the scalar reading the API must share.
        let regex = try NSRegularExpression(pattern: pattern)
        let matches = regex.firstMatch(in: key, range: NSRange(key.startIndex..., in: key)) != nil
        let accepted = (try? WatchKey(key)) != nil
        #expect(accepted == matches, "\(key.unicodeScalars.map { String($0.value, radix: 16) }): pattern \(matches), API \(accepted)")
        // A key the API accepts is stored as sent, byte for byte.
        if accepted { #expect(try WatchKey(key).description.utf8.elementsEqual(key.utf8)) }
    }

    @Test("two spellings of one text are two watch keys, as the store's index compares them")
    func watchKeysCompareAsBytes() throws {
        let composed = try WatchKey("user:\u{E9}"), decomposed = try WatchKey("user:e\u{301}")
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
        #expect(try WatchKey("user:\u{E9}") == composed)
    }
}
