import Foundation
import HeraldCore
import HeraldDelivery
import HeraldFCM
import HeraldFCMCore
import HeraldFCMSimulator
import HeraldFCMService
import HeraldPushCore
import HeraldKit
import HeraldSimulatorSupport
import HeraldStore
import HeraldTestSupport
import NIOPosix
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The FCM client against the FCM simulator, both real: TLS, HTTP/2, the RS256 grant.
@Suite(.serialized) struct FCMClientTests {
    /// A simulator, its CA on disk, and a client holding its service account.
    struct Rig {
        let simulator: FCMSimulator
        let client: FCMClient
        let directory: URL

        static func start(account: Data? = nil) async throws -> Rig {
            let simulator = try await FCMSimulator.start()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-fcm-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let ca = try simulator.tls.writeCA(to: directory.path)
            try simulator.serviceAccountJSON.write(to: directory.appendingPathComponent("service-account.json"))
            var configuration = FCMClientConfiguration(url: simulator.url, trustRootsPEMFile: ca)
            configuration.tokenURL = simulator.tokenURL
            let client = try FCMClient(
                configuration: configuration, account: try FCMServiceAccount(json: account ?? simulator.serviceAccountJSON),
                eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
            return Rig(simulator: simulator, client: client, directory: directory)
        }

        func fault(_ json: String) async throws {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(try #require(simulator.controlPort))/faults")!)
            request.httpMethod = "POST"
            request.httpBody = Data(json.utf8)
            let (_, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 201)
        }

        func stop() async {
            await client.shutdown()
            await simulator.shutdown()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    static func message(_ token: String, data: [String: String] = ["kasia": "{}"]) -> FCMMessage {
        FCMMessage(target: .token(token), data: data, priority: .high, ttlSeconds: 3600, collapseKey: "c1")
    }

    @Test("the FCM simulator's readiness: listening once started, not after it stopped")
    func simulatorListening() async throws {
        let simulator = try await FCMSimulator.start()
        #expect(simulator.isListening)
        await simulator.shutdown()
        #expect(!simulator.isListening)
    }

    @Test("a message is accepted and arrives as sent; one grant serves many sends")
    func accepted() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.stop() } }
        for i in 0..<5 {
            guard case .accepted(let name) = try await rig.client.send(Self.message("token-\(i)")) else {
                Issue.record("not accepted")
                return
            }
            #expect(name.hasPrefix("projects/herald-simulator/messages/"))
        }
        #expect(rig.client.tokens.exchangeCount == 1)
        #expect(rig.simulator.stats.accepted == 5)
        #expect(rig.simulator.stats.tokenGrants == 1)
    }

    @Test("a grant signed with another key is refused by the token endpoint, and nothing is sent")
    func foreignKeyRefused() async throws {
        let other = try FCMServiceAccount.generateFile(
            projectID: "herald-simulator", clientEmail: "herald-simulator@herald-simulator.iam.gserviceaccount.com",
            tokenURI: URL(string: "https://oauth2.googleapis.com/token")!)
        let rig = try await Rig.start(account: other)
        defer { Task { await rig.stop() } }
        let result = try await rig.client.send(Self.message("token-1"))
        guard case .rejected(let answer) = result else {
            Issue.record("a foreign grant was taken: \(result)")
            return
        }
        #expect(answer.httpStatus == 401)
        #expect(rig.simulator.stats.grantsRefused >= 1)
        #expect(rig.simulator.stats.accepted == 0)
    }

    @Test("a refused access token is refreshed once and the message goes through")
    func refreshOnce() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.stop() } }
        _ = try await rig.client.send(Self.message("warm-up"))
        try await rig.fault(#"{"kind":"unauthenticated","count":1}"#)
        guard case .accepted = try await rig.client.send(Self.message("token-2")) else {
            Issue.record("not accepted after a refresh")
            return
        }
        #expect(rig.client.tokens.exchangeCount == 2)
    }

    @Test("Google's answers mean what Google says", arguments: [
        (#"{"kind":"unregistered"}"#, "tokenDead"),
        (#"{"kind":"quota_exceeded"}"#, "project"),
        (#"{"kind":"quota_exceeded","device":true,"retry_after":7}"#, "device"),
        (#"{"kind":"unavailable","retry_after":3}"#, "service"),
        (#"{"kind":"internal"}"#, "service"),
        (#"{"kind":"sender_id_mismatch"}"#, "senderMismatch"),
        (#"{"kind":"permission_denied"}"#, "credentialsRefused"),
    ])
    func classification(fault: String, expected: String) async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.stop() } }
        try await rig.fault(fault)
        let action = try await rig.client.send(Self.message("token-3")).action
        let name: String = switch action {
        case .tokenDead: "tokenDead"
        case .senderMismatch: "senderMismatch"
        case .credentialsRefused: "credentialsRefused"
        case .retry(let after, .project): after.map { $0 >= .seconds(60) } == true ? "project" : "project without 60 s"
        case .retry(let after, .device): after == .seconds(7) ? "device" : "device without Retry-After"
        case .retry(_, .service): "service"
        default: "\(action)"
        }
        #expect(name == expected)
    }

    @Test("a 403 without an FCM code: one fresh access token first, and the send goes through")
    func forbiddenRefreshesOnce() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.stop() } }
        _ = try await rig.client.send(Self.message("warm-up"))
        try await rig.fault(#"{"kind":"permission_denied","count":1}"#)
        guard case .accepted = try await rig.client.send(Self.message("token-2")) else {
            Issue.record("not accepted after a fresh access token")
            return
        }
        #expect(rig.client.tokens.exchangeCount == 2)
    }

    @Test("an outage of Google's token endpoint is a retry with back-off, never a pause of the app's Android sends")
    func tokenEndpointOutage() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.stop() } }
        let provider = FCMPushProvider(client: rig.client)
        try await rig.fault(#"{"kind":"token_endpoint_unavailable","count":2}"#)
        let delivery = FCMMessageMappingTests.delivery(#"{"aps":{"alert":"x"}}"#, expiresIn: 1e9)
        for _ in 0..<2 {
            let outcome = await provider.send(delivery)
            guard case .retry(nil, .service, let reason) = outcome else { Issue.record("\(outcome)"); return }
            #expect(reason.contains("token endpoint is unavailable"), "\(reason)")
        }
        // Google is back: the same push goes through.
        #expect(await provider.send(delivery) == .delivered)
    }

    @Test("SENDER_ID_MISMATCH: a foreign token waits while nothing is known, is dead once others go through, and pauses the app only when a known good token fails")
    func senderMismatchBlame() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.stop() } }
        let provider = FCMPushProvider(client: rig.client)
        func delivery(_ token: String) -> ClaimedDelivery {
            var d = FCMMessageMappingTests.delivery(#"{"aps":{"alert":"x"}}"#, expiresIn: 1e9)
            d.device.token = token
            return d
        }
        // Another Firebase project's token, before anything was delivered: neither dead nor the app's fault.
        try await rig.fault(#"{"kind":"sender_id_mismatch","token":"foreign-token-1"}"#)
        #expect(await provider.send(delivery("foreign-token-1")) == .retry(after: nil, scope: .token, reason: "SENDER_ID_MISMATCH"))
        // Once the app's own tokens go through, a mismatching one is another project's: dead, and the app goes on.
        #expect(await provider.send(delivery("good-token-1")) == .delivered)
        guard case .tokenDead = await provider.send(delivery("foreign-token-1")) else { Issue.record("foreign token not dead"); return }
        #expect(await provider.send(delivery("good-token-2")) == .delivered)
        // The app's known good token refused too: the app's credentials are wrong.
        try await rig.fault(#"{"kind":"sender_id_mismatch","token":"good-token-1"}"#)
        #expect(await provider.send(delivery("good-token-1")) == .refreshCredentials(reason: "SENDER_ID_MISMATCH"))
    }

    @Test("a token with characters FCM never issues is dead (400 naming message.token)")
    func malformedToken() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.stop() } }
        let result = try await rig.client.send(Self.message("bad token with spaces"))
        #expect(result.action == .tokenDead)
        guard case .rejected(let answer) = result else { return }
        #expect(answer.fieldViolations == ["message.token"])
    }

    @Test("what FCM would refuse is refused before sending: over 4,096 bytes, reserved keys, ttl out of range")
    func validation() throws {
        #expect(throws: FCMValidationError.self) { try Self.message("t", data: ["k": String(repeating: "x", count: 4096)]).validate() }
        #expect(throws: FCMValidationError.self) { try Self.message("t", data: ["google.x": "y"]).validate() }
        var message = Self.message("t")
        message.ttlSeconds = FCMMessage.maximumTTLSeconds + 1
        #expect(throws: FCMValidationError.self) { try message.validate() }
        message.ttlSeconds = FCMMessage.maximumTTLSeconds
        try message.validate()
    }

    @Test("the request body is the document Foundation's JSONEncoder made: every target and option, strings that need escaping")
    func requestBody() throws {
        // The encoding Herald used before its own writer, kept here as the reference.
        struct Body: Encodable {
            struct Message: Encodable {
                var token: String?
                var fid: String?
                var data: [String: String]
                var android: [String: String]
            }
            var message: Message
        }
        let data = ["title": "He said \"hi\" \\ to /you/", "body": "tab\tnew line\n\u{01}\u{1F}é😀", "": "", "Zeta": "z", "alpha": "a"]
        let messages = [
            FCMMessage(target: .token("tok:en/1"), data: data, priority: .high, ttlSeconds: 86_400, collapseKey: "c\"1"),
            FCMMessage(target: .fid("fid-1"), data: [:], priority: .normal),
            FCMMessage(target: .token("t"), data: ["k": "v"], priority: .high, ttlSeconds: 0),
        ]
        for message in messages {
            var android = ["priority": message.priority.rawValue]
            if let ttl = message.ttlSeconds { android["ttl"] = "\(ttl)s" }
            if let key = message.collapseKey { android["collapse_key"] = key }
            let (token, fid): (String?, String?) = switch message.target {
            case .token(let t): (t, nil)
            case .fid(let f): (nil, f)
            }
            let reference = try JSONEncoder().encode(Body(message: .init(token: token, fid: fid, data: message.data, android: android)))
            let ours = Data(message.encoded())
            #expect(try JSONSerialization.jsonObject(with: ours) as? NSDictionary == JSONSerialization.jsonObject(with: reference) as? NSDictionary)
            // Keys sorted at every level, so one message always has the same bytes.
            #expect(try JSONValue(parsing: message.encoded()).encoded == message.encoded())
            let top = try #require(try JSONValue(parsing: message.encoded())[path: ["message"]]?.objectFields)
            #expect(top.map(\.key) == top.map(\.key).sorted())
            let keys = try #require(try JSONValue(parsing: message.encoded())[path: ["message", "data"]]?.objectFields).map(\.key)
            #expect(keys == message.data.keys.sorted())
        }
    }

    @Test("Google's answers read without Foundation: a 200's message name, the envelope's status, FCM code, message and the fields a BadRequest names")
    func answers() {
        #expect(FCMResult.accepted(answer: Array(#"{"name":"projects/p/messages/0:17"}"#.utf8)) == .accepted(name: "projects/p/messages/0:17"))
        #expect(FCMResult.accepted(answer: Array(#"{"name":7}"#.utf8)) == .accepted(name: ""))
        #expect(FCMResult.accepted(answer: []) == .accepted(name: ""))
        let envelope = #"""
            {"error":{"code":400,"message":"The registration token is not a valid FCM registration token","status":"INVALID_ARGUMENT",
              "details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"},
                {"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token","description":"Invalid registration token"}]}]}}
            """#
        let answer = FCMErrorAnswer(httpStatus: 400, body: Array(envelope.utf8), retryAfterHeader: nil)
        #expect(answer.status == "INVALID_ARGUMENT" && answer.errorCode == "INVALID_ARGUMENT")
        #expect(answer.message == "The registration token is not a valid FCM registration token")
        #expect(answer.fieldViolations == ["message.token"])
        #expect(FCMResult.rejected(answer).action == .tokenDead)
        // A detail of another type does not give the FCM code; a field of the wrong type reads as absent.
        let foreign = FCMErrorAnswer(
            httpStatus: 404, body: Array(#"{"error":{"status":5,"details":[{"@type":"x.Other","errorCode":"UNREGISTERED"}]}}"#.utf8), retryAfterHeader: nil)
        #expect(foreign.errorCode == nil && foreign.status == nil && foreign.reason == "HTTP 404")
    }

    @Test("Google's error envelope: a proxy's HTML and absurd Retry-After values are no hints")
    func hostileAnswers() {
        let html = FCMErrorAnswer(httpStatus: 502, body: Array("<html>bad gateway</html>".utf8), retryAfterHeader: "99999999999999999999")
        #expect(html.errorCode == nil && html.retryAfter == nil)
        #expect(FCMResult.rejected(html).action == .retry(after: nil, scope: .service))
        #expect(FCMErrorAnswer(httpStatus: 503, body: [], retryAfterHeader: "-1").retryAfter == nil)
        #expect(FCMErrorAnswer(httpStatus: 503, body: [], retryAfterHeader: "86400").retryAfter == .seconds(3600))
    }

    @Test("Google's own client, firebase-admin, sends through the simulator: accepted, and UnregisteredError for a dead token")
    func firebaseAdmin() async throws {
        let rig = try await Rig.start()
        defer { Task { await rig.stop() } }
        try await rig.fault(#"{"kind":"unregistered","token":"dead-token"}"#)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/firebase_admin_client.py")
        var environment = ProcessInfo.processInfo.environment
        environment["REQUESTS_CA_BUNDLE"] = rig.directory.appendingPathComponent("ca.pem").path
        // Off the task pool: the client talks to the simulator, whose handlers run on that pool.
        let output = try await runProcessOffPool(
            URL(fileURLWithPath: "/usr/bin/env"),
            [
                "python3", script.path, rig.directory.appendingPathComponent("service-account.json").path, rig.simulator.url.absoluteString,
                "live-token", "dead-token",
            ],
            environment: environment)
        let text = String(decoding: output.stdout, as: UTF8.self)
        let stderr = String(decoding: output.stderr, as: UTF8.self)
        let line = try #require(text.split(separator: "\n").last, "pip install firebase-admin: \(stderr)")
        let result = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect((result["live"] as? String)?.hasPrefix("projects/herald-simulator/messages/") == true)
        #expect(result["dead"] as? String == "UnregisteredError")
        let records = rig.simulator.notifications(token: "live-token")
        #expect(records.count == 1)
        #expect(records.first?.data == ["kasia": #"{"kind":"message"}"#, "title": "New Message"])
        #expect(records.first?.priority == "high")
        #expect(records.first?.ttl == "3600s")
        #expect(records.first?.collapseKey == "c1")
    }
}

/// The data-only message each rendered push becomes.
@Suite struct FCMMessageMappingTests {
    /// A delivery of `payload`; the push type and priority as the store keeps them.
    static func delivery(_ payload: String, pushType: String = "alert", priority: Int = 10, expiresIn: TimeInterval = 600) -> ClaimedDelivery {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        return ClaimedDelivery(
            id: 1, eventID: "e",
            device: DeviceRecord(rowID: 1, app: "kasia", platform: .android, token: "fcm-token", attributes: DeviceAttributes(production: true), createdAt: now, updatedAt: now, lastSeen: now),
            push: RenderedPush(storedPushType: pushType, storedPriority: priority, collapseID: "tx1", payload: Array(payload.utf8)), apnsID: UUID(), attempt: 1,
            expiresAt: now.addingTimeInterval(expiresIn))
    }

    @Test("a Kasia push: every field a string, the alert as title and body, high priority, ttl and collapse key")
    func kasia() throws {
        let payload = #"{"aps":{"alert":{"title":"New Message","body":"From alice"},"mutable-content":1},"kasia":{"kind":"message","payload":"ab12","amount":5}}"#
        let message = try FCMPushProvider.message(for: Self.delivery(payload), now: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(message.data["title"] == "New Message")
        #expect(message.data["body"] == "From alice")
        let kasia = try JSONSerialization.jsonObject(with: Data(try #require(message.data["kasia"]).utf8)) as? [String: Any]
        #expect(kasia?["payload"] as? String == "ab12")
        #expect(message.data["aps"] == nil, "no presentation: no aps")
        #expect(message.priority == .high)
        #expect(message.ttlSeconds == 600)
        #expect(message.collapseKey == "tx1")
        #expect(message.target == .token("fcm-token"))
    }

    @Test("how an alert presents travels as data.aps (Apple's keys, compact JSON), and HeraldKit reads it back as the APNs push's")
    func presentation() throws {
        let payload = #"{"aps":{"alert":{"title":"New Message","body":"From alice"},"mutable-content":1,"content-available":1,"sound":"default","category":"kasia.message","interruption-level":"time-sensitive","relevance-score":0.5,"badge":4,"thread-id":"kaspa:qalice"},"kasia":{"type":"contextual_message","txId":"t","sender":"kaspa:qalice","payload":null,"timestamp":1,"daaScore":2}}"#
        let message = try FCMPushProvider.message(for: Self.delivery(payload), now: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(message.data["aps"] == #"{"badge":4,"category":"kasia.message","interruption-level":"time-sensitive","relevance-score":0.5,"sound":"default","thread-id":"kaspa:qalice"}"#)
        #expect(message.data["title"] == "New Message" && message.data["body"] == "From alice")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-fcm-presentation-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let service = HeraldNotificationService(store: try SharedStore(directory: directory), resolver: try NotificationContentResolver(cipher: KasiaCipher()))
        let fromAndroid = service.handle(fcmData: message.data).outcome.presentation
        let fromIPhone = service.handle(userInfo: try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])).outcome.presentation
        #expect(fromAndroid == fromIPhone)
        #expect(fromAndroid.category == "kasia.message" && fromAndroid.sound == "default" && fromAndroid.badge == 4 && fromAndroid.threadIdentifier == "kaspa:qalice")
    }

    /// Each template's push, as the APNs payload and as the FCM data map Herald makes of it.
    static let templatePushes = [
        #"{"aps":{"alert":{"title":"Payment Received","body":"1.5 KAS from kaspa:qp...70xmfj"},"mutable-content":1,"content-available":1,"thread-id":"kaspa:qp"},"kasia":{"type":"payment","txId":"ab12","sender":"kaspa:qp","payload":null,"timestamp":1704067200,"daaScore":18446744073709551615,"amount":150000000}}"#,
        #"{"aps":{"alert":{"title":"New Message","body":"From x"},"mutable-content":1},"kasia":{"type":"contextual_message","txId":"cd","sender":"kaspa:s","payload":"6369","timestamp":5,"daaScore":7}}"#,
        #"{"aps":{"content-available":1},"c":"0123456789abcdef0123456789abcdef"}"#,
        #"{"aps":{"alert":{"title":"New Message","body":"You have a new message"},"badge":1},"session_id":"s1","message_id":"m1","timestamp":1700000000,"encrypted":true,"has_attachment":false}"#,
        #"{"aps":{"alert":{"title":"Permission needed","body":"Bash on mac"},"sound":"default"},"session_id":"s2","device_name":"mac","event_type":"Notification"}"#,
        #"{"aps":{"alert":"Hello"}}"#,
    ]

    @Test("HeraldKit decodes the FCM data map into the same HeraldPush as the APNs payload", arguments: templatePushes)
    func heraldKitDecodesBoth(payload: String) throws {
        let message = try FCMPushProvider.message(for: Self.delivery(payload), now: Date(timeIntervalSince1970: 1_800_000_000))
        let fromAPNs = try HeraldPush(json: Data(payload.utf8))
        #expect(HeraldPush(fcmData: message.data) == fromAPNs, "\(message.data)")
        if case .other(let push) = fromAPNs, push.alert == nil, push.data.isEmpty { Issue.record("the fixture decodes to nothing: \(payload)") }
    }

    @Test("a silent push goes at normal priority")
    func silent() throws {
        let message = try FCMPushProvider.message(
            for: Self.delivery(#"{"aps":{"content-available":1},"conversation":"c"}"#, pushType: "background", priority: 5),
            now: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(message.priority == .normal)
        #expect(message.data == ["conversation": "c"])
    }

    @Test("over FCM's 4,096 bytes the Kasia inline payload goes, as on APNs: the app fetches the transaction")
    func shrinks() throws {
        let big = String(repeating: "ab", count: 2500)
        let payload = #"{"aps":{"alert":{"title":"New Message","body":"x"}},"kasia":{"kind":"message","payload":"\#(big)"}}"#
        let message = try FCMPushProvider.message(for: Self.delivery(payload), now: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(message.dataBytes <= FCMMessage.maximumDataBytes)
        let kasia = try JSONSerialization.jsonObject(with: Data(try #require(message.data["kasia"]).utf8)) as? [String: Any]
        #expect(kasia?["payload"] is NSNull)
    }
}
