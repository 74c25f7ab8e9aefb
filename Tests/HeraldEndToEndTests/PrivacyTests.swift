import Foundation
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `HERALD_PRIVACY=minimal` as an operator sets it: what reaches the push service (the built-in
/// APNs simulator, which reads what Apple reads) carries no sender or amount, and groups by an opaque thread id.
@Suite("Push privacy", .serialized)
struct PrivacyTests {
    static let sender = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"

    @Test("HERALD_PRIVACY=minimal: a Kasia payment and message reach APNs with the txid, the payload and a generic alert, and nothing that names the sender or the amount")
    func minimal() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-privacy-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = "publisher-key-privacy-0123"
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_PUBLISH_KEYS": key, "HERALD_PRIVACY": "minimal",
        ])
        defer { serve.process.kill(SIGKILL) }
        let token = String(repeating: "3d", count: 32)
        let (registered, _) = try await http("POST", serve.api + "/v1/push/register",
            #"{"device_token":"\#(token)","platform":"ios","watched_addresses":[]}"#)
        #expect(registered == 200)
        let (payment, message) = (String(repeating: "4f", count: 32), String(repeating: "5f", count: 32))
        for body in [
            #"{"template":"kasia.payment","targets":{"tokens":["\#(token)"]},"fields":{"tx_id":"\#(payment)","sender":"\#(Self.sender)","timestamp":1704067200,"daa_score":8,"amount":150000000}}"#,
            #"{"template":"kasia.contextual_message","targets":{"tokens":["\#(token)"]},"fields":{"tx_id":"\#(message)","sender":"\#(Self.sender)","alias":"a1","payload":"636970685f6d73673a","timestamp":1704067200,"daa_score":9}}"#,
        ] {
            let (status, answer) = try await http("POST", serve.api + "/v1/events", body, bearer: key)
            #expect(status == 202, "\(String(decoding: answer, as: UTF8.self))")
        }
        var notifications: [[String: Any]] = []
        for _ in 0..<100 {
            let (_, data) = try await http("GET", serve.control + "/notifications?token=\(token)")
            notifications = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
            if notifications.count == 2 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let payloads = notifications.compactMap { ($0["payload"] as? String).map(withoutSignature) }.sorted()
        // Both are grouped as one conversation, by an id that is not the sender's address: a keyed
        // hash only the app's signing key makes (32 base64url characters).
        let threads = Set(payloads.compactMap { try? #/"thread-id":"([A-Za-z0-9_-]{32})"/#.firstMatch(in: $0)?.output.1 }.map(String.init))
        #expect(threads.count == 1 && payloads.count == 2, "\(payloads)")
        let thread = threads.first ?? ""
        #expect(payloads == [
            #"{"aps":{"alert":{"title":"New message"},"mutable-content":1,"content-available":1,"sound":"default","category":"kasia.payment","thread-id":"\#(thread)"},"kasia":{"type":"payment","txId":"\#(payment)","payload":null,"timestamp":1704067200,"daaScore":8}}"#,
            #"{"aps":{"alert":{"title":"New message"},"mutable-content":1,"content-available":1,"sound":"default","category":"kasia.message","thread-id":"\#(thread)"},"kasia":{"type":"contextual_message","txId":"\#(message)","payload":"636970685f6d73673a","timestamp":1704067200,"daaScore":9}}"#,
        ].sorted())
        for payload in payloads {
            #expect(!payload.contains("qp0l70zd") && !payload.contains("70xmfj") && !payload.contains("150000000") && !payload.contains("1.5 KAS"))
        }
    }
}
