import Foundation
import HeraldServer
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Testing

/// A page on another origin (Examples/web served apart from Herald) calls the API only when its
/// origin is listed in `HERALD_CORS_ORIGINS`.
@Suite("Browser origins: CORS for listed origins only")
struct BrowserOriginsTests {
    static let page = "http://localhost:8000"

    @Test("a listed origin's preflight is 204 with the methods and headers a page sends; its answers carry the origin")
    func listedOrigin() async throws {
        try await withRegistrationServer(configure: { $0.browserOrigins = BrowserOrigins([Self.page]) }) { client, _ in
            let preflight = try await send(client, .options, "/v1/push/register", headers: [
                .origin: Self.page, .accessControlRequestMethod: "POST", .accessControlRequestHeaders: "content-type",
            ])
            #expect(preflight.status == .noContent)
            #expect(preflight.headers[.accessControlAllowOrigin] == Self.page)
            #expect(preflight.headers[.accessControlAllowMethods]?.contains("POST") == true)
            #expect(preflight.headers[.accessControlAllowHeaders]?.lowercased().contains("content-type") == true)
            #expect(preflight.headers[.vary] == "Origin")
            let key = try await send(client, .get, "/v1/push/vapid-public-key", headers: [.origin: Self.page])
            #expect(key.headers[.accessControlAllowOrigin] == Self.page)
            // A refusal is readable by the page too.
            let refused = try await send(client, .post, "/v1/push/register", "{}", headers: [.origin: Self.page, .contentType: "application/json"])
            #expect(refused.status == .badRequest)
            #expect(refused.headers[.accessControlAllowOrigin] == Self.page)
            // Publishing is not for pages, whatever their origin.
            let publish = try await send(client, .options, "/v1/events", headers: [.origin: Self.page, .accessControlRequestMethod: "POST"])
            #expect(publish.headers[.accessControlAllowOrigin] == nil)
        }
    }

    @Test("another origin gets no CORS headers (the browser keeps its page out); without a list nothing changes")
    func otherOrigins() async throws {
        try await withRegistrationServer(configure: { $0.browserOrigins = BrowserOrigins([Self.page]) }) { client, _ in
            let preflight = try await send(client, .options, "/v1/push/register", headers: [
                .origin: "https://evil.example", .accessControlRequestMethod: "POST",
            ])
            #expect(preflight.status == .methodNotAllowed)
            #expect(preflight.headers[.accessControlAllowOrigin] == nil)
            let get = try await send(client, .get, "/healthz", headers: [.origin: "https://evil.example"])
            #expect(get.status == .ok && get.headers[.accessControlAllowOrigin] == nil)
        }
        try await withRegistrationServer { client, _ in
            let preflight = try await send(client, .options, "/v1/push/register", headers: [.origin: Self.page, .accessControlRequestMethod: "POST"])
            #expect(preflight.status == .methodNotAllowed && preflight.headers[.accessControlAllowOrigin] == nil)
        }
    }

    @Test("HERALD_CORS_ORIGINS values are origins: scheme, host, port, nothing after", arguments: [
        ("https://app.example.com", "https://app.example.com"), ("http://LOCALHOST:8000", "http://localhost:8000"),
        ("*", nil), ("https://app.example.com/", nil), ("https://app.example.com/path", nil), ("ftp://x", nil), ("app.example.com", nil),
        ("https://user@app.example.com", nil),
    ] as [(String, String?)])
    func parsing(text: String, origin: String?) {
        #expect(BrowserOrigins.origin(text) == origin)
    }
}
