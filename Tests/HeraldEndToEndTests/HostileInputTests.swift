import Foundation
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every number a request carries, fed the extremes: each answer is a 2xx or a 4xx, never a 5xx,
/// and the process lives on (a trapping conversion would kill it for every app).
@Suite("Hostile numbers against herald serve")
struct HostileInputTests {
    static let extremes = [
        "9223372036854775807", "-9223372036854775808", "9223372036854775808", "18446744073709551615", "18446744073709551616",
        "1e300", "-1e300", "1e309", "-1", "0", "1.5", "-0.0", #""NaN""#, #""-1""#, #""9999999999999999999""#, "null",
    ]

    static let sender = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"
    static let recipient = "kaspa:qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqkx9awp4e"

    /// (method, path, body with `X` where the number goes, bearer).
    static func requests(_ x: String) -> [(String, String, String?, String?)] {
        let kasia = { (field: String) -> String in
            var fields = ["\"tx_id\":\"\(String(repeating: "0f", count: 32))\"", "\"sender\":\"\(sender)\"", "\"recipient\":\"\(recipient)\"",
                          "\"timestamp\":1700000000", "\"daa_score\":1", "\"amount\":1"]
            fields = fields.map { $0.hasPrefix("\"\(field)\"") ? "\"\(field)\":\(x)" : $0 }
            return #"{"template":"kasia.payment","fields":{\#(fields.joined(separator: ","))}}"#
        }
        let custom = { (option: String) in #"{"template":"custom","\#(option)":\#(x),"targets":{"keys":["session:s"]},"fields":{"aps":{"alert":"x"}}}"# }
        let session = #"{"template":"session.message","fields":{"session_id":"s","message_id":"m","timestamp":\#(x)}}"#
        return [
            ("POST", "/v1/events", custom("priority"), "publisher-key-0123456789"),
            ("POST", "/v1/events", custom("expiration"), "publisher-key-0123456789"),
            ("POST", "/v1/events", kasia("timestamp"), "publisher-key-0123456789"),
            ("POST", "/v1/events", kasia("daa_score"), "publisher-key-0123456789"),
            ("POST", "/v1/events", kasia("amount"), "publisher-key-0123456789"),
            ("POST", "/v1/events", session, "publisher-key-0123456789"),
            ("POST", "/v1/events:batch", #"{"events":[\#(custom("expiration")),\#(kasia("amount"))]}"#, "publisher-key-0123456789"),
            ("POST", "/apns/send", #"{"session_id":"s","payload":{"message_id":"m","timestamp":\#(x)}}"#, "publisher-key-0123456789"),
            ("POST", "/v1/push/register", #"{"device_token":\#(x),"platform":"ios","watched_addresses":["session:s"]}"#, nil),
            ("POST", "/v1/push/register", #"{"device_token":"\#(String(repeating: "ab", count: 32))","platform":"ios","watched_addresses":[\#(x)]}"#, nil),
            ("POST", "/apns/register", #"{"session_id":\#(x),"device_token":"\#(String(repeating: "ab", count: 32))"}"#, nil),
            ("GET", "/v1/push/status?device_token=\(x.replacingOccurrences(of: "\"", with: ""))", nil, nil),
        ]
    }

    @Test("every numeric field of every route, at the extremes: 2xx or 4xx, and the process lives")
    func extremes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-hostile-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": "publisher-key-0123456789", "HERALD_GHOSTTALK_SEND_ENABLED": "true",
            "HERALD_REGISTRATION_RATE": "0", "HERALD_PUBLISH_RATE": "0",
        ])
        defer { if serve.process.process.isRunning { serve.process.kill(SIGKILL) } }
        // A device for the targets, so valid values make deliveries.
        let (registered, _) = try await http("POST", serve.api + "/v1/push/register",
            #"{"device_token":"\#(String(repeating: "cd", count: 32))","platform":"ios","watched_addresses":["session:s","\#(Self.recipient)"]}"#)
        #expect(registered == 200)
        var answered = 0
        for x in Self.extremes {
            for (method, path, body, bearer) in Self.requests(x) {
                let (status, data) = try await http(method, serve.api + path, body, bearer: bearer)
                #expect((200..<500).contains(status), "\(method) \(path) with \(x): \(status) \(String(decoding: data, as: UTF8.self))")
                answered += 1
            }
        }
        #expect(answered == Self.extremes.count * 12)
        #expect(serve.process.process.isRunning, "herald serve died: \(serve.process.fullLog().suffix(2_000))")
        let (health, _) = try await http("GET", serve.api + "/healthz")
        #expect(health == 200)
        serve.process.kill(SIGTERM)
        #expect(serve.process.exitStatus == 0)
    }
}
