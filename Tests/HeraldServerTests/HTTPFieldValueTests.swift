@testable import HeraldServer
import HTTPTypes
import HummingbirdTesting
import Testing

@Suite("Reading a request's headers")
struct HTTPFieldValueTests {
    @Test("a header's value is what HTTPTypes' subscript gives: nil when absent, repeated fields joined")
    func sameAsSubscript() throws {
        let cookie = try #require(HTTPField.Name("Cookie"))
        let cases: [HTTPFields] = [
            [:],
            [.contentType: "application/json"],
            [.contentType: "application/json", .authorization: "Bearer pk"],
            HTTPFields([HTTPField(name: .authorization, value: "Bearer a"), HTTPField(name: .authorization, value: "Bearer b")]),
            HTTPFields([HTTPField(name: cookie, value: "a=1"), HTTPField(name: cookie, value: "b=2")]),
        ]
        for fields in cases {
            for name in [HTTPField.Name.contentType, .authorization, .contentLength, cookie] {
                #expect(fields.value(name) == fields[name], "\(fields) \(name)")
            }
        }
        // A repeated Authorization is one text, as before: "a, Bearer b" is no publisher key.
        #expect(cases[3].value(.authorization) == "Bearer a, Bearer b")
        #expect(cases[4].value(cookie) == "a=1; b=2")
    }

    @Test("a media type or scheme matches in any case of its ASCII letters, and only of them")
    func asciiCaseInsensitivePrefix() {
        #expect("Application/JSON; charset=utf-8".hasPrefix(ignoringASCIICase: "application/json"))
        #expect("BEARER pk".hasPrefix(ignoringASCIICase: "bearer "))
        #expect("application/json".hasPrefix(ignoringASCIICase: "application/json"))
        #expect(!"application/jso".hasPrefix(ignoringASCIICase: "application/json"))
        #expect(!"text/plain".hasPrefix(ignoringASCIICase: "application/json"))
        #expect(!"bearerpk".hasPrefix(ignoringASCIICase: "bearer "))
        // U+212A KELVIN SIGN lowercases to an ASCII "k"; a header's scheme is ASCII.
        #expect(!"\u{212A}ey".hasPrefix(ignoringASCIICase: "key"))
        #expect("\u{212A}ey".lowercased().hasPrefix("key"))
    }

    @Test("the server takes JSON whatever the case of its Content-Type, and refuses other types")
    func contentTypeCase() async throws {
        try await withRegistrationServer { client, _ in
            let body = #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":[]}"#
            let upper = try await send(client, .post, "/v1/push/register", body, headers: [.contentType: "APPLICATION/JSON; charset=UTF-8"])
            #expect(upper.status == .ok)
            let other = try await send(client, .post, "/v1/push/register", body, headers: [.contentType: "text/json"])
            #expect(other.status == .unsupportedMediaType)
        }
    }
}
