import Foundation
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `herald serve` as a child process, as a user runs it: defaults (SQLite file, built-in simulator).
@Suite("herald serve, as a process", .serialized)
struct ServeProcessTests {
    static let sender = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"

    static func kasiaEvent(txID: String, payload: String) -> String {
        #"{"template":"kasia.contextual_message","fields":{"tx_id":"\#(txID)","sender":"\#(sender)","alias":"a1","payload":"\#(payload)","timestamp":1704067200,"daa_score":12345678}}"#
    }

    @Test("register, publish, and the exact pushes arrive at the built-in simulator; no full token in the log; SIGTERM exits 0; nothing left in the temporary directory")
    func endToEnd() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-serve-\(UUID())")
        // Herald's own temporary directory: the built-in simulators' CAs stay in memory.
        let temporary = directory.appendingPathComponent("tmp")
        try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let publisherKey = "publisher-key-0123456789abcdef"
        let serve = try HeraldProcess(["serve"], environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
            "HERALD_HTTP_PORT": "0", "HERALD_PUBLISH_KEYS": publisherKey,
            // Everything Herald and its libraries log, so the check below sees every line.
            "HERALD_LOG_LEVEL": "trace", "TMPDIR": temporary.path,
        ])
        defer { if serve.process.isRunning { serve.kill(SIGKILL) } }
        // The readiness line says where the API and the simulator's control API are.
        let ready = try serve.ready()
        let api = ready.api
        let control = try #require(ready.simulatorControl)

        let token = String(repeating: "ab", count: 32)
        let gone = String(repeating: "cd", count: 32)
        let txID = String(repeating: "0f", count: 32)
        let (atLimit, overLimit) = (String(repeating: "1e", count: 32), String(repeating: "2e", count: 32))
        for device in [token, gone] {
            let (status, body) = try await http("POST", api + "/v1/push/register",
                #"{"device_token":"\#(device)","platform":"ios","watched_addresses":["\#(Self.sender)"]}"#)
            let answer = try JSONSerialization.jsonObject(with: body) as? [String: Any]
            #expect(status == 200 && answer?["registered"] as? Bool == true && answer?["watched_addresses"] as? Int == 1)
            #expect((answer?["signing_key"] as? String)?.count == 43, "the answer names the app's signing key")
        }
        // APNs says the second device's token is gone.
        _ = try await http("POST", control + "/faults", #"{"kind":"unregistered","token":"\#(gone)","timestamp_ms":\#(Int64(Date().timeIntervalSince1970 * 1000) + 60_000)}"#)
        for (id, payload) in [(txID, "636970685f6d73673a"), (atLimit, String(repeating: "ab", count: 1_744)),
                              (overLimit, String(repeating: "ab", count: 1_745))] {
            let (status, data) = try await http("POST", api + "/v1/events", Self.kasiaEvent(txID: id, payload: payload), bearer: publisherKey)
            #expect(status == 202, "\(String(decoding: data, as: UTF8.self)): \(serve.log.split(separator: "\n").filter { $0.contains("error") || $0.contains("request_id") }.suffix(8).joined(separator: "\n"))")
        }
        // Rejected input is not logged with its token either.
        let badToken = String(repeating: "ef", count: 31) + "zz"
        let (bad, _) = try await http("POST", api + "/v1/push/register",
            #"{"device_token":"\#(badToken)","platform":"ios","watched_addresses":["\#(Self.sender)"]}"#)
        #expect(bad == 400)
        // A handshake and a payment, addressed by token; a custom push with data keys and a collapse id.
        let (handshakeID, paymentID) = (String(repeating: "3e", count: 32), String(repeating: "4e", count: 32))
        let expiration = Int(Date().timeIntervalSince1970) + 3_600
        for body in [
            #"{"template":"kasia.handshake","targets":{"tokens":["\#(token)"]},"fields":{"tx_id":"\#(handshakeID)","sender":"\#(Self.sender)","payload":"ab","timestamp":1704067200,"daa_score":7}}"#,
            #"{"template":"kasia.payment","targets":{"tokens":["\#(token)"]},"fields":{"tx_id":"\#(paymentID)","sender":"\#(Self.sender)","timestamp":1704067200,"daa_score":8,"amount":150000000}}"#,
            #"{"template":"custom","collapse_id":"c-1","expiration":\#(expiration),"targets":{"tokens":["\#(token)"]},"fields":{"aps":{"alert":{"title":"T","body":"B"},"sound":"default"},"data":{"k":"v","n":1}}}"#,
        ] {
            let (status, _) = try await http("POST", api + "/v1/events", body, bearer: publisherKey)
            #expect(status == 202)
        }
        let (unauthorized, _) = try await http("POST", api + "/v1/events", #"{"template":"custom","targets":{"tokens":["\#(token)"]},"fields":{"aps":{"alert":"x"}}}"#)
        #expect(unauthorized == 401)

        // The pushes reach the simulator over TLS + HTTP/2. The polls end as soon as they do; their
        // bound (60 s) is only for a broken build, not a deadline a loaded machine has to meet.
        var notifications: [[String: Any]] = []
        for _ in 0..<600 {
            let (_, data) = try await http("GET", control + "/notifications?token=\(token)")
            notifications = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
            if notifications.count == 6 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(notifications.count == 6)
        // Each push is the rendered document with the app's signature attached (docs/signed-pushes.md).
        func payload(_ collapseID: String) throws -> String {
            let signed = try #require(notifications.first { $0["collapse_id"] as? String == collapseID }?["payload"] as? String)
            #expect(signed != withoutSignature(signed), "no signature attached")
            return withoutSignature(signed)
        }
        func expected(_ id: String, _ inline: String) -> String {
            #"{"aps":{"alert":{"title":"New Message","body":"From kaspa:qp...70xmfj"},"mutable-content":1,"content-available":1,"sound":"default","category":"kasia.message","thread-id":"\#(Self.sender)"},"kasia":{"type":"contextual_message","txId":"\#(id)","sender":"\#(Self.sender)","payload":\#(inline),"timestamp":1704067200,"daaScore":12345678}}"#
        }
        #expect(try payload(txID) == expected(txID, #""636970685f6d73673a""#))
        // Inline while the whole signed push fits 4,096 bytes: with this sender, the sound and the
        // category, at 3,488 characters and not at 3,490. The payload gives way; how it rings stays (docs/kasia.md).
        #expect(try payload(atLimit) == expected(atLimit, "\"" + String(repeating: "ab", count: 1_744) + "\""))
        #expect(try notifications.first { $0["collapse_id"] as? String == atLimit }.map { try #require($0["payload"] as? String).utf8.count } == 4_096)
        // Past it the signed push is shrunk (its keys then sorted): the same document, the payload null.
        func object(_ text: String) throws -> NSDictionary { try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary) }
        #expect(try object(payload(overLimit)) == object(expected(overLimit, "null")))
        #expect(try payload(handshakeID) == #"{"aps":{"alert":{"title":"New Contact Request","body":"From kaspa:qp...70xmfj"},"mutable-content":1,"content-available":1,"sound":"default","category":"kasia.handshake","thread-id":"\#(Self.sender)"},"kasia":{"type":"handshake","txId":"\#(handshakeID)","sender":"\#(Self.sender)","payload":"ab","timestamp":1704067200,"daaScore":7}}"#)
        #expect(try payload(paymentID) == #"{"aps":{"alert":{"title":"Payment Received","body":"1.5 KAS from kaspa:qp...70xmfj"},"mutable-content":1,"content-available":1,"sound":"default","category":"kasia.payment","thread-id":"\#(Self.sender)"},"kasia":{"type":"payment","txId":"\#(paymentID)","sender":"\#(Self.sender)","payload":null,"timestamp":1704067200,"daaScore":8,"amount":150000000}}"#)
        // The caller's keys come out sorted (one input, one byte string); data keys at the top level.
        #expect(try payload("c-1") == #"{"aps":{"alert":{"body":"B","title":"T"},"sound":"default"},"k":"v","n":1}"#)
        // The headers APNs saw: topic, push type, priority, expiration.
        for n in notifications {
            #expect(n["topic"] as? String == "com.example.herald")
            #expect(n["push_type"] as? String == "alert" && n["priority"] as? Int == 10)
        }
        #expect(notifications.first { $0["collapse_id"] as? String == "c-1" }?["expiration"] as? Int == expiration)

        // The gone device's 410 (newer than its registration) removes it.
        var removed = false
        for _ in 0..<600 where !removed {
            let (_, data) = try await http("GET", api + "/v1/push/status?device_token=\(gone)")
            removed = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["registered"] as? Bool == false
            if !removed { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(removed)
        // What the instance counts answers on the admin listener only, not to whoever reaches the API.
        let metrics = String(decoding: try await http("GET", ready.admin + "/metrics").1, as: UTF8.self)
        #expect(metrics.contains(#"herald_delivery_attempts_total{outcome="sent",reason="accepted"} 6"#), "\(metrics)")
        #expect(try await http("GET", ready.admin + "/v1/stats").0 == 200)
        // The operator's endpoints are 404 on the API's port, naming where they answer.
        for path in ["/metrics", "/v1/stats", "/simulators/apns/stats"] {
            let (status, body) = try await http("GET", api + path)
            #expect(status == 404, "\(path)")
            #expect(String(decoding: body, as: UTF8.self).contains("admin listener (HERALD_ADMIN_HOST:HERALD_ADMIN_PORT"), "\(path)")
        }
        // So do the built-in simulators' control APIs, and they listen on no port of their own.
        #expect(control == ready.admin + "/simulators/apns")
        for name in ["apns", "fcm", "webpush"] {
            #expect(try await http("GET", ready.admin + "/simulators/\(name)/stats").0 == 200)
            #expect(try await http("GET", api + "/simulators/\(name)/stats").0 == 404)
        }
        #expect(try await http("GET", ready.admin + "/simulators/apns/nothing").0 == 404)
        let document = String(decoding: try await http("GET", api + "/openapi.json").1, as: UTF8.self)
        #expect(!document.contains(#""/metrics""#) && !document.contains(#""/v1/stats""#))

        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path) == [], "herald serve wrote to its temporary directory")
        serve.kill(SIGTERM)
        #expect(serve.exitStatus == 0)
        // Tokens appear in the log only as their first 8 characters and "…"; the publisher key never.
        let log = serve.fullLog()
        #expect(log.contains("SIMULATOR"), "every start says pushes go to the simulator")
        // A clean stop says so; nothing it logs after that is a warning or worse.
        let lines = log.split(separator: "\n")
        let finished = lines.lastIndex { $0.contains("shutdown finished") }
        #expect(finished != nil, "a clean stop logs a line that says so: \(lines.suffix(4))")
        let after = lines[((finished ?? lines.endIndex - 1) + 1)...]
        #expect(!after.contains { $0.contains(" warning ") || $0.contains(" error ") || $0.contains(" critical ") }, "logged after the stop: \(after)")
        #expect(log.contains(String(gone.prefix(8)) + "…"), "the token-dead line names the device by its prefix")
        for secret in [token, gone, badToken, publisherKey] {
            #expect(!log.contains(secret), "the log carries \(secret.prefix(8))… in full")
        }
        // A clean stop is not an error: the built-in simulators shut down gracefully too.
        let errors = log.split(separator: "\n").filter { $0.contains(" error ") || $0.contains(" critical ") }
        #expect(errors.isEmpty, "\(errors)")
    }
}

#if canImport(Glibc)
import Glibc
#endif

@Suite("herald serve and idle clients")
struct IdleClientTests {
    /// Opens a TCP connection that sends nothing; returns true when the server closes it before
    /// `patience` seconds of waiting (false: it was still open).
    static func closedByServer(port: Int, patience: Int) throws -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CLIError("socket") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw CLIError("connect") }
        var timeout = timeval(tv_sec: patience, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }

    @Test("a connection that sends nothing is closed after HERALD_HTTP_IDLE_TIMEOUT_SECONDS")
    func idleConnectionClosed() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-idle-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try HeraldProcess(["serve"], environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
            "HERALD_HTTP_PORT": "0", "HERALD_HTTP_IDLE_TIMEOUT_SECONDS": "1",
        ])
        defer { serve.kill(SIGTERM) }
        let api = try serve.ready().api
        let port = try #require(Int(api.split(separator: ":").last ?? ""))
        // Closed by the server within a minute: without an idle timeout it would stay open.
        #expect(try Self.closedByServer(port: port, patience: 60))
    }
}
