import Foundation
import HeraldKit
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Read on one device, gone from the others (SPEC §15), through `herald serve` under the `wallet`
/// policy, its APNs and FCM simulators in processes of their own, every signature made by the
/// official Kaspa SDK: wallet W has sealed iPhones A and B and a sealed Android phone C, wallet V
/// has iPhone D. A marks contact X read.
@Suite("Read markers through herald serve", .serialized)
struct ReadMarkerDeliveryTests {
    static let publisher = "read-marker-publisher-01"
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let contact = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"
    static let (a, b, d) = (String(repeating: "a1", count: 32), String(repeating: "b2", count: 32), String(repeating: "d4", count: 32))
    static let c = "fcm-read_1:" + String(repeating: "C", count: 140)
    static let (walletW, walletV) = (String(repeating: "22", count: 32), String(repeating: "33", count: 32))

    /// Signatures by the official Kaspa SDK (Fixtures/sdk_sign.py), made in one run.
    struct Wallets {
        var addresses: [String: String]
        var signatures: [String: [UInt8]]

        /// `messages`: (wallet name, message); the wallets are `w` and `v`.
        init(_ messages: [(String, String)]) throws {
            let request = try JSONSerialization.data(withJSONObject: [
                "keys": ["w": ReadMarkerDeliveryTests.walletW, "v": ReadMarkerDeliveryTests.walletV], "messages": messages.map { [$0.0, $0.1] },
            ])
            let output = try runProcess(
                URL(fileURLWithPath: "/usr/bin/env"), ["python3", ReadMarkerDeliveryTests.fixtures.appendingPathComponent("sdk_sign.py").path], input: request)
            guard output.status == 0 else { throw CLIError("sdk_sign.py: \(String(decoding: output.stderr, as: UTF8.self)) (needs: pip install kaspa)") }
            let answer = output.lastJSONLine
            addresses = answer["addresses"] as? [String: String] ?? [:]
            let list = answer["signatures"] as? [String] ?? []
            signatures = [:]
            for (i, (name, message)) in messages.enumerated() where i < list.count {
                signatures[name + "\u{0}" + message] = Hex.decode(list[i])
            }
        }

        /// A HeraldKit ownership that signs with the SDK's signatures (at `timestamp`).
        func ownership(_ wallet: String, at timestamp: Int64) -> AddressOwnership {
            let signatures = self.signatures
            return AddressOwnership(now: { Date(timeIntervalSince1970: TimeInterval(timestamp)) }) { _, message in
                guard let signature = signatures[wallet + "\u{0}" + message] else { throw CLIError("the SDK did not sign \(message)") }
                return signature
            }
        }

        func hex(_ wallet: String, _ message: String) -> String { Hex.encode(signatures[wallet + "\u{0}" + message] ?? []) }
    }

    /// The gateway and its simulators.
    struct Gateway {
        let directory: URL
        let apns: MockAPNsProcess
        let fcm: MockFCMProcess
        let environment: [String: String]
        var serve: HeraldProcess
        var api: String
        var admin: String

        init(window: Int? = nil, lease: Int? = nil) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-read-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            apns = try MockAPNsProcess(directory: directory, topic: "com.example.read")
            fcm = try MockFCMProcess(directory: directory.appendingPathComponent("fcm"))
            var environment = apns.serveEnvironment.merging(fcm.serveEnvironment) { _, new in new }
            environment.merge([
                "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
                "HERALD_PUBLISH_KEYS": ReadMarkerDeliveryTests.publisher, "HERALD_REGISTRATION_POLICY": "wallet",
                "HERALD_REGISTRATION_RATE": "0", "HERALD_SIGNING_KEY_PATH": try signingKeyFile(in: directory),
            ]) { _, new in new }
            if let window { environment["HERALD_DISMISS_WINDOW_SECONDS"] = "\(window)" }
            // A killed process's leased pushes go again once the lease ends.
            if let lease { environment["HERALD_OUTBOX_LEASE_SECONDS"] = "\(lease)" }
            self.environment = environment
            serve = try HeraldProcess(["serve"], environment: environment)
            (api, admin) = try Self.addresses(serve)
        }

        static func addresses(_ serve: HeraldProcess) throws -> (String, String) {
            let ready = try serve.ready()
            return (ready.api, ready.admin)
        }

        /// Every delivery so far sent and its outcome recorded (`/v1/stats`' queue is empty): a
        /// crash now has nothing in flight to send again.
        func settled() async throws {
            try await eventually {
                try ReadMarkerDeliveryTests.json(try await http("GET", admin + "/v1/stats").1)["queue_depth"] as? Int == 0
            }
        }

        /// `kill -9`, then a new process on the same database.
        mutating func crashAndRestart() throws {
            serve.kill(SIGKILL)
            serve = try HeraldProcess(["serve"], environment: environment)
            (api, admin) = try Self.addresses(serve)
        }

        func stop() {
            serve.kill(SIGTERM)
            apns.process.kill(SIGTERM)
            fcm.process.kill(SIGTERM)
            try? FileManager.default.removeItem(at: directory)
        }

        func apnsRecords(_ token: String) async throws -> [[String: Any]] {
            try json(try await http("GET", apns.control + "/notifications?token=" + token).1)["notifications"] as? [[String: Any]] ?? []
        }

        func fcmRecords(_ token: String) async throws -> [[String: Any]] {
            try json(try await http("GET", fcm.control + "/notifications?token=" + token).1)["notifications"] as? [[String: Any]] ?? []
        }

        func client(_ keys: SealedPushKeys) -> HeraldClient {
            var configuration = HeraldClient.Configuration(baseURL: URL(string: api)!)
            configuration.pushKeys = keys
            return HeraldClient(configuration: configuration)
        }

        /// A visible push to `tokens`, the barrier after which nothing earlier is still on its way.
        func alert(_ tokens: [String], text: String) async throws {
            let targets = tokens.map { "\"\($0)\"" }.joined(separator: ",")
            let (status, body) = try await http(
                "POST", api + "/v1/events", #"{"template":"custom","targets":{"tokens":[\#(targets)]},"fields":{"aps":{"alert":"\#(text)"}}}"#,
                bearer: ReadMarkerDeliveryTests.publisher)
            #expect(status == 202, "\(String(decoding: body, as: UTF8.self))")
        }

        func signingKey() async throws -> String {
            try #require(try json(try await http("GET", api + "/v1/push/signing-key").1)["public_key"] as? String)
        }
    }

    static func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func registerMessage(_ token: String, _ timestamp: Int64) -> String {
        AddressOwnership.message(app: "default", deviceToken: token, timestamp: timestamp)
    }

    static func readMessage(_ token: String, upTo: String, _ issuedAt: Int64) -> String {
        AddressOwnership.readMessage(app: "default", deviceToken: token, conversation: contact, upTo: upTo, issuedAt: issuedAt)
    }

    /// The devices' keys, registered: A, B (iPhones) and C (Android) proving W, D proving V.
    struct Devices {
        var keys: [String: SealedPushKeys] = [:]
    }

    static func register(_ gateway: Gateway, _ wallets: Wallets, at now: Int64) async throws -> Devices {
        var devices = Devices()
        for (token, wallet) in [(a, "w"), (b, "w"), (c, "w"), (d, "v")] {
            let keys = SealedPushKeys()
            devices.keys[token] = keys
            var builder = WatchSetBuilder()
            builder.addOwnAddress(try #require(wallets.addresses[wallet]))
            try await gateway.client(keys).register(
                deviceToken: token, watchSet: try builder.build(), platform: token == c ? .android : .ios, environment: nil,
                ownership: wallets.ownership(wallet, at: now))
        }
        return devices
    }

    /// Each record's document, opened and verified with the pinned key, in arrival order.
    static func documents(_ records: [[String: Any]], keys: SealedPushKeys, pinned: String, android: Bool) throws -> [[UInt8]] {
        let authenticator = try PushAuthenticator(pinnedKey: pinned, keys: keys)
        return try records.map { record in
            android
                ? try authenticator.document(fcmData: record["data"] as? [String: String] ?? [:])
                : try authenticator.document(userInfo: try json(Data((record["payload"] as? String ?? "").utf8)))
        }
    }

    /// What each dismissal push (a `herald.dismiss` document, not an alert's ride-along) says.
    static func dismissals(_ records: [[String: Any]], keys: SealedPushKeys, pinned: String, android: Bool) throws -> [[Dismissal]] {
        try documents(records, keys: keys, pinned: pinned, android: android).filter { try json(Data($0))["conversation"] != nil }.map(Dismissal.all)
    }

    @Test("A's marker: B's APNs gets exactly one background push at priority 5 (outside: content-available and the seal), C's FCM one normal data message, A and D nothing; opened, each says X up to the position; forgeries and a replay are refused and send nothing")
    func siblingsAndForgeries() async throws {
        let now = Int64(Date().timeIntervalSince1970)
        let e = String(repeating: "e5", count: 32)  // registered by nobody
        let genuine = Self.readMessage(Self.a, upTo: "100", now)
        let wallets = try Wallets(
            [(Self.a, "w"), (Self.b, "w"), (Self.c, "w")].map { ($0.1, Self.registerMessage($0.0, now)) } + [("v", Self.registerMessage(Self.d, now))]
                + [("w", genuine), ("v", genuine), ("w", Self.readMessage(Self.a, upTo: "100", now - 700)), ("w", Self.readMessage(Self.d, upTo: "100", now)),
                   ("w", Self.readMessage(e, upTo: "100", now))])
        var gateway = try Gateway()
        defer { gateway.stop() }
        let devices = try await Self.register(gateway, wallets, at: now)
        let w = try #require(wallets.addresses["w"])

        func marker(_ token: String, issuedAt: Int64, signature: String) -> String {
            #"{"device_token":"\#(token)","conversation":"\#(Self.contact)","up_to":"100","issued_at":\#(issuedAt),"address":"\#(w)","signature":"\#(signature)"}"#
        }
        let forgeries = [
            ("another wallet's signature", marker(Self.a, issuedAt: now, signature: wallets.hex("v", genuine)), "unproven_address"),
            ("a stale issued_at", marker(Self.a, issuedAt: now - 700, signature: wallets.hex("w", Self.readMessage(Self.a, upTo: "100", now - 700))), "stale_marker"),
            ("a signature over another issued_at", marker(Self.a, issuedAt: now + 1, signature: wallets.hex("w", genuine)), "unproven_address"),
            ("a device that did not prove W", marker(Self.d, issuedAt: now, signature: wallets.hex("w", Self.readMessage(Self.d, upTo: "100", now))), "unproven_address"),
            ("a token nobody registered", marker(e, issuedAt: now, signature: wallets.hex("w", Self.readMessage(e, upTo: "100", now))), "not_registered"),
        ]
        for (name, body, code) in forgeries {
            let (status, answer) = try await http("POST", gateway.api + "/v1/push/read", body)
            #expect(status == 403, "\(name): \(String(decoding: answer, as: UTF8.self))")
            #expect((try Self.json(answer)["error"] as? [String: Any])?["code"] as? String == code, "\(name)")
        }
        // HeraldKit's marker, signed by the SDK through AddressOwnership: two devices told.
        let told = try await gateway.client(try #require(devices.keys[Self.a])).markRead(
            deviceToken: Self.a, conversation: Self.contact, upTo: "100", address: w, ownership: wallets.ownership("w", at: now))
        #expect(told == 2)
        let (replayed, replayAnswer) = try await http("POST", gateway.api + "/v1/push/read", marker(Self.a, issuedAt: now, signature: wallets.hex("w", genuine)))
        let replayError = try Self.json(replayAnswer)["error"] as? [String: Any]
        #expect(replayed == 403 && replayError?["code"] as? String == "replayed_marker")

        try await eventually {
            let (b, c) = (try await gateway.apnsRecords(Self.b), try await gateway.fcmRecords(Self.c))
            return !b.isEmpty && !c.isEmpty
        }
        // The barrier: a visible push to each device, after which no dismissal is still on its way.
        try await gateway.alert([Self.a, Self.b, Self.c, Self.d], text: "barrier")
        try await eventually {
            for token in [Self.a, Self.b, Self.d] where !(try await gateway.apnsRecords(token).contains { $0["push_type"] as? String == "alert" }) {
                return false
            }
            return try await gateway.fcmRecords(Self.c).count >= 2
        }
        let pinned = try await gateway.signingKey()
        let bRecords = try await gateway.apnsRecords(Self.b).filter { $0["push_type"] as? String == "background" }
        try #require(bRecords.count == 1, "\(bRecords)")
        #expect(bRecords[0]["priority"] as? Int == 5)
        let outside = try Self.json(Data((bRecords[0]["payload"] as? String ?? "").utf8))
        #expect(Set(outside.keys) == ["aps", "herald_sealed"] && NSDictionary(dictionary: outside["aps"] as? [String: Any] ?? [:]) == ["content-available": 1])
        #expect(!(bRecords[0]["payload"] as? String ?? "").contains("qp0l70zd") && (bRecords[0]["collapse_id"] as? String)?.count == 32)
        #expect(try Self.dismissals(bRecords, keys: try #require(devices.keys[Self.b]), pinned: pinned, android: false) == [[Dismissal(conversation: Self.contact, upTo: "100")]])

        let cRecords = try await gateway.fcmRecords(Self.c)
        let cDocuments = try Self.documents(cRecords, keys: try #require(devices.keys[Self.c]), pinned: pinned, android: true)
        let cDismissals = zip(cRecords, cDocuments).filter { (try? Self.json(Data($0.1)))?["conversation"] != nil }
        #expect(cDismissals.map { Dismissal.all(in: $0.1) } == [[Dismissal(conversation: Self.contact, upTo: "100")]])
        #expect(cDismissals.first?.0["priority"] as? String == "normal")
        #expect((cDismissals.first?.0["data"] as? [String: String])?.keys.sorted() == ["herald_sealed"])
        // The caller and the other wallet's device: their alert alone.
        for token in [Self.a, Self.d] {
            let records = try await gateway.apnsRecords(token)
            #expect(records.count == 1 && records[0]["push_type"] as? String == "alert", "\(token.prefix(4)): \(records)")
        }
    }

    @Test("20 markers within a second: each sibling gets at most one push per window, the last carrying the highest position; B's next alert carries the dismissal inside the seal")
    func coalescingAndRideAlong() async throws {
        let now = Int64(Date().timeIntervalSince1970)
        let positions = (1...20).map(String.init)
        let wallets = try Wallets(
            [(Self.a, "w"), (Self.b, "w"), (Self.c, "w")].map { ($0.1, Self.registerMessage($0.0, now)) } + [("v", Self.registerMessage(Self.d, now))]
                + positions.map { ("w", Self.readMessage(Self.a, upTo: $0, now)) })
        let window = 5.0
        var gateway = try Gateway(window: Int(window))
        defer { gateway.stop() }
        let devices = try await Self.register(gateway, wallets, at: now)
        let client = gateway.client(try #require(devices.keys[Self.a]))
        let started = ContinuousClock.now
        for position in positions {
            try await client.markRead(
                deviceToken: Self.a, conversation: Self.contact, upTo: position, address: wallets.addresses["w"], ownership: wallets.ownership("w", at: now))
        }
        let posting = (ContinuousClock.now - started) / .seconds(1)
        let pinned = try await gateway.signingKey()
        let (bKeys, cKeys) = (try #require(devices.keys[Self.b]), try #require(devices.keys[Self.c]))
        var b: [[Dismissal]] = []
        var c: [[Dismissal]] = []
        try await eventually {
            b = try Self.dismissals(try await gateway.apnsRecords(Self.b), keys: bKeys, pinned: pinned, android: false)
            c = try Self.dismissals(try await gateway.fcmRecords(Self.c), keys: cKeys, pinned: pinned, android: true)
            return b.last?.first?.upTo == "20" && c.last?.first?.upTo == "20"
        }
        // One push per window at most: the first at once, the rest merged into one per window
        // that the markers spanned (the posting took `posting` seconds).
        let most = 1 + Int((posting / window).rounded(.up)) + 1
        #expect(b.count <= most && c.count <= most, "B \(b.count), C \(c.count) pushes for 20 markers posted in \(posting) s (window \(window) s)")
        #expect(b.count < 20 && c.count < 20)

        // B's next alert: the dismissal rides along inside the seal.
        try await gateway.alert([Self.b], text: "next")
        var alert: [String: Any] = [:]
        try await eventually {
            alert = try await gateway.apnsRecords(Self.b).first { $0["push_type"] as? String == "alert" } ?? [:]
            return !alert.isEmpty
        }
        let payload = alert["payload"] as? String ?? ""
        #expect(!payload.contains("herald_dismiss") && !payload.contains("qp0l70zd"), "nothing of it outside the seal")
        let document = try PushAuthenticator(pinnedKey: pinned, keys: bKeys).document(userInfo: try Self.json(Data(payload.utf8)))
        #expect(Dismissal.all(in: document) == [Dismissal(conversation: Self.contact, upTo: "20")])
        #expect((try Self.json(Data(document))["aps"] as? [String: Any])?["alert"] as? String == "next")
        // The extension's one call hands the ride-along over with the notification it shows.
        let service = HeraldNotificationService(
            store: try SharedStore(directory: gateway.directory.appendingPathComponent("extension")), resolver: try NotificationContentResolver(cipher: KasiaCipher()),
            authenticator: try PushAuthenticator(pinnedKey: pinned, keys: bKeys))
        let (shown, rejection) = service.handle(userInfo: try Self.json(Data(payload.utf8)))
        #expect(rejection == nil && shown.body == "next" && shown.dismissals == [Dismissal(conversation: Self.contact, upTo: "20")])
    }

    @Test("kill -9 right after the answer, twice, each marker's dismissal waiting for its window: a restart on the same database delivers each once")
    func crashBetweenAnswerAndSend() async throws {
        let now = Int64(Date().timeIntervalSince1970)
        let positions = ["1", "2", "3"]
        let wallets = try Wallets(
            [(Self.a, "w"), (Self.b, "w"), (Self.c, "w")].map { ($0.1, Self.registerMessage($0.0, now)) } + [("v", Self.registerMessage(Self.d, now))]
                + positions.map { ("w", Self.readMessage(Self.a, upTo: $0, now)) })
        // Each marker after the first lands within the window of the push before it: it is armed
        // (stored, due when the window ends) and not sent when the process dies, whatever the
        // machine's speed — the kill follows the answer by far less than the window. The first
        // crash's case (a dismissal due at once, killed before its push was committed or after)
        // is the dispatcher's dedupe key, held by ReadMarkerAPITests.crashBetweenCommitAndMark.
        var gateway = try Gateway(window: 10, lease: 15)
        defer { gateway.stop() }
        let devices = try await Self.register(gateway, wallets, at: now)
        let pinned = try await gateway.signingKey()
        let (bKeys, cKeys) = (try #require(devices.keys[Self.b]), try #require(devices.keys[Self.c]))
        var b: [[Dismissal]] = []
        var c: [[Dismissal]] = []
        func read() async throws {
            b = try Self.dismissals(try await gateway.apnsRecords(Self.b), keys: bKeys, pinned: pinned, android: false)
            c = try Self.dismissals(try await gateway.fcmRecords(Self.c), keys: cKeys, pinned: pinned, android: true)
        }
        for position in positions {
            let told = try await gateway.client(try #require(devices.keys[Self.a])).markRead(
                deviceToken: Self.a, conversation: Self.contact, upTo: position, address: wallets.addresses["w"], ownership: wallets.ownership("w", at: now))
            #expect(told == 2)
            if position != positions[0] { try gateway.crashAndRestart() }
            try await eventually {
                try await read()
                return b.last?.first?.upTo == position && c.last?.first?.upTo == position
            }
            // Its outcome recorded before the next crash: a push the outbox sent and had not yet
            // recorded when killed goes again (the outbox's own promise), which is not this test's case.
            try await gateway.settled()
        }
        // The barrier: every push before it has arrived.
        try await gateway.alert([Self.b, Self.c], text: "barrier")
        try await eventually {
            let alerted = try await gateway.apnsRecords(Self.b).contains { $0["push_type"] as? String == "alert" }
            let fcmCount = try await gateway.fcmRecords(Self.c).count
            return alerted && fcmCount >= 4
        }
        try await read()
        let expected = positions.map { [Dismissal(conversation: Self.contact, upTo: $0)] }
        #expect(b == expected && c == expected, "B \(b), C \(c)")
        // The barrier alert carries the latest position along.
        let alert = try #require(try await gateway.apnsRecords(Self.b).first { $0["push_type"] as? String == "alert" })
        let document = try #require(try Self.documents([alert], keys: bKeys, pinned: pinned, android: false).first)
        #expect(Dismissal.all(in: document) == [Dismissal(conversation: Self.contact, upTo: "3")])
    }

    @Test("a Matrix notify with nothing unread left in a room: its devices get a signed dismissal of the room, up to now; a notify with unread messages dismisses nothing")
    func matrixZeroUnread() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-read-matrix-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            "HERALD_MATRIX_APPS": "im.example.ios=apns",
        ])
        defer { serve.process.kill(SIGTERM) }
        let phone = try #require(try Self.json(try await http("POST", serve.control + "/tokens", #"{"environment":"sandbox"}"#).1)["token"] as? String)
        let pushkey = Data(stride(from: 0, to: phone.count, by: 2).map { UInt8(phone.dropFirst($0).prefix(2), radix: 16)! }).base64EncodedString()
        func notify(_ counts: String, event: String) async throws {
            let body = #"{"notification":{\#(event)"room_id":"!room:example.org","counts":{\#(counts)},"devices":[{"app_id":"im.example.ios","pushkey":"\#(pushkey)","pushkey_ts":1}]}}"#
            let (status, answer) = try await http("POST", serve.api + "/_matrix/push/v1/notify", body)
            #expect(status == 200 && String(decoding: answer, as: UTF8.self) == #"{"rejected":[]}"#)
        }
        let before = Int64(Date().timeIntervalSince1970 * 1_000)
        try await notify(#""unread":1"#, event: #""event_id":"$e1","type":"m.room.message","sender":"@alice:example.org","#)
        try await notify(#""unread":0"#, event: "")
        var records: [[String: Any]] = []
        try await eventually {
            records = try Self.json(try await http("GET", serve.control + "/notifications?token=" + phone).1)["notifications"] as? [[String: Any]] ?? []
            return records.count >= 3
        }
        let pinned = try #require(try Self.json(try await http("GET", serve.api + "/v1/push/signing-key").1)["public_key"] as? String)
        let authenticator = try PushAuthenticator(pinnedKey: pinned, keys: nil)
        var dismissals: [Dismissal] = []
        for record in records {
            let document = try authenticator.document(payload: Array((record["payload"] as? String ?? "").utf8))
            guard try Self.json(Data(document))["conversation"] != nil else { continue }
            #expect(record["push_type"] as? String == "background" && record["priority"] as? Int == 5)
            dismissals += Dismissal.all(in: document)
        }
        #expect(dismissals.count == 1 && dismissals.first?.conversation == "!room:example.org", "\(records)")
        #expect((dismissals.first.flatMap { Int64($0.upTo) } ?? 0) >= before)
    }
}
