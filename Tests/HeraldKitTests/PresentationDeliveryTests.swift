import Foundation
import HeraldKit
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How pushes present, through `herald serve` to its APNs simulator: an app's `presentation:`
/// defaults under an event's own fields, Kasia's ring and categories, the localizable generic
/// alert of a sealed push, and the extension's presentation of what it opens.
@Suite("Presentation through herald serve", .serialized)
struct PresentationDeliveryTests {
    static let publisher = "presentation-publisher-0001"
    static let sender = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"

    static func json(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("defaults per app and template under the event's fields; a sealed Kasia payment's outer aps is exactly the localizable alert, how it rings and its category; the extension gets the thread back")
    func presentation() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-presentation-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("herald.yaml")
        try Data("""
            apps:
              - id: kasia
                publish_keys: [\(Self.publisher)]
                sealed_alert_key: HERALD_NEW_MESSAGE
                sealed_alerts:
                  kasia.payment: {text: New payment, key: HERALD_NEW_PAYMENT}
                presentation:
                  sound: chime.caf
                  relevance_score: 0.25
                  templates:
                    kasia.payment: {sound: coins.caf, interruption_level: time-sensitive}
                    custom: {category: backend.note}
            """.utf8).write(to: config)
        let serve = try ServeProcess(environment: [
            "HERALD_CONFIG": config.path, "HERALD_HTTP_PORT": "0", "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
        ])
        defer { serve.process.kill(SIGTERM) }

        // A sealed iPhone (HeraldKit's registration with keys) and one without keys.
        let keys = SealedPushKeys()
        let pins = try SharedStore(directory: directory.appendingPathComponent("app-group"))
        var configuration = HeraldClient.Configuration(baseURL: URL(string: serve.api)!)
        configuration.pushKeys = keys
        configuration.signingKeyPin = .trustOnFirstUse(pins)
        func token() async throws -> String {
            try #require(try Self.json(try await http("POST", serve.control + "/tokens", #"{"environment":"sandbox"}"#).1)["token"] as? String)
        }
        let (sealedPhone, clearPhone) = (try await token(), try await token())
        var builder = WatchSetBuilder()
        builder.addKey("session:p")
        try await HeraldClient(configuration: configuration).register(deviceToken: sealedPhone, watchSet: try builder.build(), environment: .sandbox)
        let (registered, _) = try await http("POST", serve.api + "/v1/push/register", #"{"device_token":"\#(clearPhone)","platform":"ios","environment":"sandbox","watched_addresses":["session:p"]}"#)
        #expect(registered == 200)

        let (payment, message, handshake) = (String(repeating: "9a", count: 32), String(repeating: "9b", count: 32), String(repeating: "9c", count: 32))
        for body in [
            #"{"template":"kasia.payment","collapse_id":"pay","targets":{"keys":["session:p"]},"fields":{"tx_id":"\#(payment)","sender":"\#(Self.sender)","timestamp":1704067200,"daa_score":8,"amount":150000000}}"#,
            #"{"template":"kasia.contextual_message","collapse_id":"message","targets":{"keys":["session:p"]},"fields":{"tx_id":"\#(message)","sender":"\#(Self.sender)","alias":"a1b2c3d4e5f6","payload":"ab","timestamp":1704067200,"daa_score":9}}"#,
            #"{"template":"kasia.handshake","collapse_id":"handshake","targets":{"keys":["session:p"]},"fields":{"tx_id":"\#(handshake)","sender":"\#(Self.sender)","payload":"ab","timestamp":1704067200,"daa_score":10}}"#,
            #"{"template":"custom","collapse_id":"plain","targets":{"keys":["session:p"]},"fields":{"aps":{"alert":"hi"}}}"#,
            #"{"template":"custom","collapse_id":"own","sound":"none","badge":3,"category":"my.own","interruption_level":"passive","relevance_score":1,"thread_id":"room-7","targets":{"keys":["session:p"]},"fields":{"aps":{"alert":"hi"}}}"#,
        ] {
            let (status, answer) = try await http("POST", serve.api + "/v1/events", body, bearer: Self.publisher)
            #expect(status == 202, "\(String(decoding: answer, as: UTF8.self))")
        }
        func pushes(_ token: String) async throws -> [String: [String: Any]] {
            let list = try Self.json(try await http("GET", serve.control + "/notifications?token=" + token).1)["notifications"] as? [[String: Any]] ?? []
            var byCollapse: [String: [String: Any]] = [:]
            for push in list {
                guard let payload = push["payload"] as? String else { continue }
                byCollapse[push["collapse_id"] as? String ?? ""] = try Self.json(Data(withoutSignature(payload).utf8))
            }
            return byCollapse
        }
        var clear: [String: [String: Any]] = [:]
        var sealed: [String: [String: Any]] = [:]
        try await eventually {
            clear = try await pushes(clearPhone)
            sealed = try await pushes(sealedPhone)
            return clear.count == 5 && sealed.count == 5
        }
        func aps(_ push: [String: Any]?) -> NSDictionary { NSDictionary(dictionary: push?["aps"] as? [String: Any] ?? [:]) }

        // Unsealed: the template's defaults over the app's, the event's fields over both; a Kasia payment rings with its own sound and category.
        #expect(aps(clear["pay"]) == NSDictionary(dictionary: [
            "alert": ["title": "Payment Received", "body": "1.5 KAS from kaspa:qp...70xmfj"], "mutable-content": 1, "content-available": 1,
            "sound": "coins.caf", "category": "kasia.payment", "interruption-level": "time-sensitive", "relevance-score": 0.25, "thread-id": Self.sender,
        ]))
        #expect(aps(clear["plain"]) == NSDictionary(dictionary: ["alert": "hi", "sound": "chime.caf", "relevance-score": 0.25, "category": "backend.note"]))
        #expect(aps(clear["own"]) == NSDictionary(dictionary: [
            "alert": "hi", "relevance-score": 1, "category": "my.own", "badge": 3, "interruption-level": "passive", "thread-id": "room-7",
        ]))
        #expect(aps(clear["message"])["sound"] as? String == "chime.caf" && aps(clear["message"])["category"] as? String == "kasia.message")
        #expect(aps(clear["handshake"])["sound"] as? String == "chime.caf" && aps(clear["handshake"])["category"] as? String == "kasia.handshake")

        // Sealed: Apple sees the template's localizable alert, how it rings, its category, and nothing that names anyone.
        let outer = try #require(sealed.values.first { (($0["aps"] as? [String: Any])?["alert"] as? [String: Any])?["loc-key"] as? String == "HERALD_NEW_PAYMENT" })
        #expect(aps(outer) == NSDictionary(dictionary: [
            "alert": ["loc-key": "HERALD_NEW_PAYMENT", "body": "New payment"], "mutable-content": 1,
            "sound": "coins.caf", "category": "kasia.payment", "interruption-level": "time-sensitive", "relevance-score": 0.25,
        ]))
        #expect(Set(outer.keys) == ["aps", "herald_sealed"])
        let outerText = String(decoding: try JSONSerialization.data(withJSONObject: outer), as: UTF8.self)
        #expect(!outerText.contains("qp0l70zd") && !outerText.contains(payment) && !outerText.contains("150000000"))
        // The other two Kasia kinds and the custom push with every option: the app's generic alert, and how each rings.
        let generic = sealed.values.filter { (($0["aps"] as? [String: Any])?["alert"] as? [String: Any])?["loc-key"] as? String == "HERALD_NEW_MESSAGE" }
        let outers = Set(generic.map { aps($0) })
        let alert = ["loc-key": "HERALD_NEW_MESSAGE", "body": "New message"]
        #expect(outers == Set([
            NSDictionary(dictionary: ["alert": alert, "mutable-content": 1, "sound": "chime.caf", "category": "kasia.message", "relevance-score": 0.25]),
            NSDictionary(dictionary: ["alert": alert, "mutable-content": 1, "sound": "chime.caf", "category": "kasia.handshake", "relevance-score": 0.25]),
            NSDictionary(dictionary: ["alert": alert, "mutable-content": 1, "sound": "chime.caf", "category": "backend.note", "relevance-score": 0.25]),
            NSDictionary(dictionary: ["alert": alert, "mutable-content": 1, "category": "my.own", "interruption-level": "passive", "relevance-score": 1, "badge": 3]),
        ]), "\(generic)")
        for push in sealed.values {
            let text = String(decoding: try JSONSerialization.data(withJSONObject: push), as: UTF8.self)
            #expect(!text.contains("qp0l70zd") && !text.contains("room-7") && !text.contains("thread-id") && ![payment, message, handshake].contains(where: text.contains), "\(text)")
        }
        // Nor does a header: the collapse ids Apple saw are opaque.
        let headers = try Self.json(try await http("GET", serve.control + "/notifications?token=" + sealedPhone).1)["notifications"] as? [[String: Any]] ?? []
        #expect(headers.count == 5 && headers.allSatisfy { ($0["collapse_id"] as? String)?.count == 32 && !["pay", "message", "handshake", "plain", "own"].contains($0["collapse_id"] as? String ?? "") })

        // The extension opens it: the thread (which only the seal carried), the sender and how it rings.
        let pinned = try #require(try SigningKeyPin.trustOnFirstUse(pins).pinnedKey())
        let extensionStore = try SharedStore(directory: directory.appendingPathComponent("extension"))
        try extensionStore.setContacts([Contact(address: Self.sender, name: "Alice", avatar: "avatars/alice.png")])
        let service = HeraldNotificationService(
            store: extensionStore, resolver: try NotificationContentResolver(cipher: KasiaCipher()),
            authenticator: try PushAuthenticator(pinnedKey: pinned, keys: keys))
        let (shown, rejection) = service.handle(userInfo: outer)
        #expect(rejection == nil && shown.title == "Payment Received" && shown.body == "1.5 KAS from Alice")
        #expect(shown.presentation.threadIdentifier == Self.sender && shown.presentation.conversation == NotificationConversation(id: Self.sender))
        #expect(shown.presentation.sender == NotificationPerson(handle: Self.sender, displayName: "Alice", avatar: "avatars/alice.png"))
        #expect(shown.presentation.category == "kasia.payment" && shown.presentation.sound == "coins.caf" && shown.presentation.interruptionLevel == "time-sensitive")
    }
}
