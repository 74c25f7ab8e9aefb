import Foundation
import HeraldKit
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HeraldClient against a real `herald serve` (SQLite file, built-in APNs simulator).
@Suite(.serialized) struct HeraldClientTests {
    struct Served {
        let process: HeraldProcess
        let api: URL
        let control: String
        /// The admin listener (`/v1/stats`).
        let admin: URL
        let directory: URL

        static func start(_ environment: [String: String] = [:]) throws -> Served {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("heraldkit-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            var env = [
                "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
                "HERALD_PUBLISH_KEYS": "publisher-key-00001",
            ]
            env.merge(environment) { _, new in new }
            let serve = try ServeProcess(environment: env)
            return Served(
                process: serve.process, api: URL(string: serve.api)!, control: serve.control, admin: URL(string: serve.admin)!,
                directory: directory)
        }

        func stop() {
            process.kill(SIGTERM)
            try? FileManager.default.removeItem(at: directory)
        }
    }

    let cipher = KasiaCipher()
    static let token = String(repeating: "5a", count: 32)

    @Test("an iPhone registers the token bytes iOS hands it: Herald knows it by their hex")
    func registerTokenBytes() async throws {
        let served = try Served.start()
        defer { served.stop() }
        let client = HeraldClient(configuration: .init(baseURL: served.api))
        var builder = WatchSetBuilder()
        builder.addKey("session:bytes")
        let bytes = Data((0..<32).map { UInt8($0 * 7 + 3) })
        #expect(try await client.register(deviceToken: bytes, watchSet: try builder.build(), environment: .sandbox) == 1)
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        #expect(try await client.status(deviceToken: hex).registered)
    }

    @Test func registerStatusUpdateUnregister() async throws {
        let served = try Served.start()
        defer { served.stop() }
        let client = HeraldClient(configuration: .init(baseURL: served.api))
        let me = try cipher.address(of: cipher.randomPrivateKey()).string
        let alice = try cipher.address(of: cipher.randomPrivateKey()).string
        let bob = try cipher.address(of: cipher.randomPrivateKey()).string

        var builder = WatchSetBuilder()
        builder.addOwnAddress(me)
        builder.addContact(alice, aliases: ["a1b2c3d4e5f6"])
        builder.addContact(alice)  // twice: merged
        let set = try builder.build()
        // The user's own address is one of theirs, not watched: their own messages do not come back to them.
        #expect(set.addresses == [me] && set.watchedAddresses == [alice])
        #expect(try await client.register(deviceToken: Self.token, watchSet: set) == 1)

        let before = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        var status = try await client.status(deviceToken: Self.token)
        let after = Date()
        #expect(status.registered)
        #expect(Set(status.watchedAddresses) == [alice])
        let lastSeen = try #require(status.lastSeen)
        #expect(lastSeen >= before && lastSeen <= after)

        builder.addContact(bob)
        #expect(try await client.update(deviceToken: Self.token, watchSet: try builder.build()) == 2)
        status = try await client.status(deviceToken: Self.token)
        #expect(Set(status.watchedAddresses) == [alice, bob])

        #expect(try await client.unregister(deviceToken: Self.token))
        #expect(try await client.unregister(deviceToken: Self.token) == false)
        status = try await client.status(deviceToken: Self.token)
        #expect(!status.registered && status.watchedAddresses.isEmpty && status.lastSeen == nil)

        // Updating a device Herald does not know is a typed 404.
        do {
            try await client.update(deviceToken: Self.token, watchSet: set)
            Issue.record("update of an unknown device succeeded")
        } catch {
            #expect(error.isNotRegistered)
        }
        // Herald's 400 names the field at fault.
        do {
            try await client.register(deviceToken: "not-hex", watchSet: set)
            Issue.record("a bad token was accepted")
        } catch {
            guard case .server(400, _, _, let field) = error else { Issue.record("\(error)"); return }
            #expect(field == "device_token")
        }
    }

    /// What the gateway renders for a Kasia payment, HeraldKit decodes and opens.
    /// A device token of `environment` from the simulator, as Apple issues one to a build.
    static func issueToken(_ served: Served, environment: String) async throws -> String {
        var request = URLRequest(url: URL(string: served.control + "/tokens")!)
        request.httpMethod = "POST"
        request.httpBody = Data(#"{"environment":"\#(environment)"}"#.utf8)
        let (data, _) = try await URLSession.shared.data(for: request)
        return try #require((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["token"] as? String)
    }

    static func publish(_ served: Served, key: String) async throws {
        var request = URLRequest(url: served.api.appendingPathComponent("v1/events"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer publisher-key-00001", forHTTPHeaderField: "Authorization")
        request.httpBody = Data(#"{"template":"custom","targets":{"keys":["\#(key)"]},"fields":{"aps":{"alert":"hello"}}}"#.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 202)
    }

    static func pushes(_ served: Served, token: String) async throws -> Int {
        let (data, _) = try await URLSession.shared.data(from: URL(string: served.control + "/notifications?token=" + token)!)
        return ((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [Any])?.count ?? 0
    }

    @Test("HeraldKit's default registration reaches the device on an app configured for production, and on one for the sandbox; a token of the other environment is refused as Apple refuses it", arguments: ["production", "sandbox"])
    func environments(_ environment: String) async throws {
        let served = try Served.start(["HERALD_APNS_ENVIRONMENT": environment])
        defer { served.stop() }
        let client = HeraldClient(configuration: .init(baseURL: served.api))
        var builder = WatchSetBuilder()
        builder.addKey("session:env")
        // The build's token, registered as an app does: no environment named.
        let token = try await Self.issueToken(served, environment: environment)
        try await client.register(deviceToken: token, watchSet: try builder.build())
        // A token of the other environment (a build of the other kind), registered the same way.
        let other = try await Self.issueToken(served, environment: environment == "production" ? "sandbox" : "production")
        try await client.register(deviceToken: other, watchSet: try builder.build())
        try await Self.publish(served, key: "session:env")
        var delivered = 0
        var refused = 0
        for _ in 0..<200 where delivered == 0 || refused == 0 {
            delivered = try await Self.pushes(served, token: token)
            let (stats, _) = try await URLSession.shared.data(from: served.admin.appendingPathComponent("v1/stats"))
            let reasons = (try JSONSerialization.jsonObject(with: stats) as? [String: Any])?["failure_reasons"] as? [String: Int]
            refused = reasons?["BadDeviceToken"] ?? 0
            if delivered == 0 || refused == 0 { try await Task.sleep(nanoseconds: 100_000_000) }
        }
        #expect(delivered == 1)
        #expect(try await Self.pushes(served, token: other) == 0)
        #expect(refused == 1, "the other environment's token is refused with BadDeviceToken, as Apple refuses it, and dropped")
    }

    @Test("the build's environment from its provisioning profile: development is the sandbox")
    func buildEnvironment() {
        func profile(_ value: String, key: String = "aps-environment") -> Data {
            Data("0\u{82}binary<?xml version=\"1.0\"?><plist><dict><key>Entitlements</key><dict><key>\(key)</key>\n\t<string>\(value)</string></dict></dict></plist>tail".utf8)
        }
        #expect(APNsBuildEnvironment.environment(fromProfile: profile("development")) == .sandbox)
        #expect(APNsBuildEnvironment.environment(fromProfile: profile("production")) == .production)
        #expect(APNsBuildEnvironment.environment(fromProfile: profile("production", key: "com.apple.developer.aps-environment")) == .production)
        #expect(APNsBuildEnvironment.environment(fromProfile: profile("other")) == nil)
        #expect(APNsBuildEnvironment.environment(fromProfile: Data("no entitlement".utf8)) == nil)
        // Where no app bundle says (here, Linux), Herald decides from the app's configuration.
        #expect(APNsBuildEnvironment.current == nil)
    }

    @Test func aPushFromTheGatewayOpensInTheExtensionLogic() async throws {
        let served = try Served.start()
        defer { served.stop() }
        let key = try cipher.randomPrivateKey()
        let me = try cipher.address(of: key)
        let sender = try cipher.address(of: cipher.randomPrivateKey()).string
        var builder = WatchSetBuilder()
        builder.addOwnAddress(me.string)
        try await HeraldClient(configuration: .init(baseURL: served.api)).register(deviceToken: Self.token, watchSet: try builder.build())

        let memo = #"{"type":"payment","message":"for lunch","amount":1.5,"timestamp":1750000000000,"version":1}"#
        let payload = Hex.encode(KasiaPayload.paymentPayload(sealed: try cipher.encrypt(memo, to: me)))
        let txID = String(repeating: "ab", count: 32)
        var request = URLRequest(url: served.api.appendingPathComponent("v1/events"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer publisher-key-00001", forHTTPHeaderField: "Authorization")
        request.httpBody = try JSONSerialization.data(withJSONObject: [
            "template": "kasia.payment",
            "fields": ["tx_id": txID, "sender": sender, "recipient": me.string, "payload": payload, "timestamp": 1_750_000_000, "daa_score": 42, "amount": 150_000_000],
        ])
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 202)

        var pushJSON: String?
        for _ in 0..<100 where pushJSON == nil {
            let (data, _) = try await URLSession.shared.data(from: URL(string: served.control + "/notifications?token=" + Self.token)!)
            let list = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
            pushJSON = list.first?["payload"] as? String
            if pushJSON == nil { try await Task.sleep(nanoseconds: 100_000_000) }
        }
        let push = try HeraldPush(json: Data(try #require(pushJSON).utf8))
        guard case .kasia(let kasia) = push else { Issue.record("not a Kasia push: \(push)"); return }
        #expect(kasia.txID == txID && kasia.amount == 150_000_000 && kasia.payloadHex == payload)
        let outcome = try NotificationContentResolver(cipher: cipher).resolve(push, contacts: [Contact(address: sender, name: "Carol")], privateKey: key)
        #expect(outcome.title == "Payment Received")
        #expect(outcome.body == "1.5 KAS from Carol")
        #expect(outcome.record == .message(StoredMessage(txID: txID, sender: sender, kind: "payment", plaintext: memo, timestamp: 1_750_000_000)))
    }

    @Test func registrationKeysAndUnreachableServers() async throws {
        let served = try Served.start(["HERALD_REGISTRATION_KEYS": "device-key-0000001"])
        defer { served.stop() }
        var builder = WatchSetBuilder()
        builder.addKey("session:demo")
        let set = try builder.build()
        do {
            try await HeraldClient(configuration: .init(baseURL: served.api)).register(deviceToken: Self.token, watchSet: set)
            Issue.record("registered without the key")
        } catch {
            guard case .server(401, _, _, _) = error else { Issue.record("\(error)"); return }
        }
        #expect(try await HeraldClient(configuration: .init(baseURL: served.api, registrationKey: "device-key-0000001")).register(deviceToken: Self.token, watchSet: set) == 1)

        // Nothing listens here: retried, then a transport error.
        var config = HeraldClient.Configuration(baseURL: URL(string: "http://127.0.0.1:9")!)
        config.retryDelay = 0.01
        do {
            _ = try await HeraldClient(configuration: config).status(deviceToken: Self.token)
            Issue.record("a closed port answered")
        } catch {
            guard case .transport = error else { Issue.record("\(error)"); return }
        }
    }

    @Test("wallet policy: HeraldKit signs the own address with the wallet's key and Herald accepts it; unsigned or wrongly signed, 403 naming addresses[0]")
    func walletProofs() async throws {
        let served = try Served.start(["HERALD_REGISTRATION_POLICY": "wallet"])
        defer { served.stop() }
        let client = HeraldClient(configuration: .init(baseURL: served.api))
        let walletKey = try cipher.randomPrivateKey()
        let me = try cipher.address(of: walletKey).string
        let alice = try cipher.address(of: cipher.randomPrivateKey()).string
        var builder = WatchSetBuilder()
        builder.addOwnAddress(me)
        builder.addContact(alice)
        let set = try builder.build()
        let token = String(repeating: "7B", count: 32)  // upper case: signed as Herald keeps it, in lower case

        func refusal(_ ownership: AddressOwnership?) async -> HeraldClientError? {
            do {
                try await client.register(deviceToken: token, watchSet: set, ownership: ownership)
                return nil
            } catch { return error }
        }
        guard case .server(403, "unproven_address", _, "addresses[0]")? = await refusal(nil) else {
            Issue.record("an own address was taken without proof")
            return
        }
        guard case .server(403, "unproven_address", _, "addresses[0]")? = await refusal(AddressOwnership(privateKey: try cipher.randomPrivateKey())) else {
            Issue.record("another wallet's signature was taken")
            return
        }
        // Signed an hour ago: outside Herald's 10 minutes.
        let stale = AddressOwnership(privateKey: walletKey, now: { Date().addingTimeInterval(-3600) })
        guard case .server(403, "unproven_address", _, "addresses[0]")? = await refusal(stale) else {
            Issue.record("an hour-old proof was taken")
            return
        }
        #expect(try await client.register(deviceToken: token, watchSet: set, ownership: AddressOwnership(privateKey: walletKey)) == 1)
        #expect(try await client.update(deviceToken: token, watchSet: set, ownership: AddressOwnership(privateKey: walletKey)) == 1)
        #expect(try await client.status(deviceToken: token).registered)
    }

    @Test func theBuilderRefusesBadAddressesAndLimits() throws {
        var builder = WatchSetBuilder()
        builder.addOwnAddress("kaspa:qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqkx9awp4e")
        builder.addContact("kaspa:qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqkx9awp4f")  // checksum off by one
        #expect(throws: HeraldClientError.self) { try builder.build() }
        do {
            _ = try builder.build()
        } catch {
            guard case .invalidWatchKey(let field, _, let reason) = error else { Issue.record("\(error)"); return }
            #expect(field == "contacts[0]" && reason.contains("checksum"))
        }
        var crowded = WatchSetBuilder()
        crowded.addContact("kaspa:qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqkx9awp4e", aliases: (0..<101).map { String(format: "%012x", $0) })
        #expect(throws: HeraldClientError.self) { try crowded.build() }
        var many = WatchSetBuilder()
        for i in 0..<1001 { many.addKey("session:\(i)") }
        #expect(throws: HeraldClientError.self) { try many.build() }
        // Own addresses apart, then contacts, no duplicates; routes merged per contact.
        var ok = WatchSetBuilder()
        let a = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"
        let zero = "kaspa:qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqkx9awp4e"
        ok.addOwnAddress(zero)
        ok.addContact(a, aliases: ["x"])
        ok.addContact(zero)
        ok.addContact(a, aliases: ["y", "x"])
        let set = try ok.build()
        #expect(set.watchedAddresses == [a])
        #expect(set.addresses == [zero])
        #expect(set.contextualRoutes == [WatchSet.Route(peerAddress: a, aliases: ["x", "y"])])
    }
}
