import Foundation
import HeraldCore
import HeraldDelivery
import HeraldFCMCore
import HeraldFCMService
import HeraldWebPushCore
import HeraldWebPushService
import Crypto
import HeraldPushCore
import HTTPTypes
import NIOCore
import HeraldStore
import HummingbirdTesting
import Testing

/// The `dismiss` template: a backend tells a conversation's other devices to take its
/// notifications away; a push that shows nothing and names the conversation only inside.
@Suite("/v1/events: the dismiss template", .serialized)
struct DismissTemplateTests {
    static let token = String(repeating: "d1", count: 32)

    @Test("a background push at priority 5 carrying the conversation and position, under a collapse id that does not name it; one per conversation replaces the last")
    func shape() async throws {
        try await withRegistrationServer { client, store in
            _ = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(Self.token)","platform":"ios","device_id":"phone","watched_addresses":["session:x"]}"#)
            for upTo in ["41", "42"] {
                let r = try await send(client, .post, "/v1/events",
                    #"{"template":"dismiss","targets":{"device_ids":["phone"]},"fields":{"conversation":"room-7","up_to":"\#(upTo)"}}"#, headers: publisher)
                #expect(r.status == .accepted, "\(String(buffer: r.body))")
            }
            let claimed = try await store.claimDue(app: "default", platform: .ios, limit: 10, now: Date().addingTimeInterval(1), lease: .seconds(30))
            #expect(claimed.count == 2)
            for delivery in claimed {
                #expect(delivery.push.pushType == .background && delivery.push.priority == .considerate)
                let document = try #require(try JSONSerialization.jsonObject(with: Data(delivery.push.payload)) as? [String: Any])
                #expect(NSDictionary(dictionary: document["aps"] as? [String: Any] ?? [:]) == ["content-available": 1])
                #expect(document["conversation"] as? String == "room-7" && ["41", "42"].contains(document["up_to"] as? String ?? ""))
                #expect(Set(document.keys) == ["aps", "conversation", "up_to"])
                let collapse = try #require(delivery.push.collapseID)
                #expect(!collapse.contains("room-7") && collapse.count == 32)
            }
            #expect(claimed[0].push.collapseID == claimed[1].push.collapseID)

            // The same push on the other services: an FCM data message at normal priority, Web Push at Urgency low.
            var android = claimed[0]
            android.device.platform = .android
            #expect(try FCMPushProvider.message(for: android, now: Date()).priority == .normal)
            let keys = WebPushKeys(publicKey: P256.KeyAgreement.PrivateKey().publicKey, auth: Array(repeating: 7, count: 16))
            let signer = VAPIDSigner(key: VAPIDKey(privateKey: .init()), subject: try VAPIDSubject("mailto:ops@example.com"))
            let web = try WebPushProvider.message(
                for: claimed[0], keys: keys, endpoint: try WebPushEndpoint("https://push.example.com/s/1"), signer: signer, now: Date())
            #expect(web.urgency == .low && web.topic == WebPushMessage.topic(forCollapseID: claimed[0].push.collapseID))
        }
    }

    @Test("out of range, missing, or with an alert's options: refused naming the field, and nothing is committed")
    func refused() async throws {
        try await withRegistrationServer { client, store in
            _ = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(Self.token)","platform":"ios","device_id":"phone","watched_addresses":["session:x"]}"#)
            let cases: [(String, String)] = [
                (#""fields":{"up_to":"1"}"#, "fields.conversation"),
                (#""fields":{"conversation":"c"}"#, "fields.up_to"),
                (#""fields":{"conversation":"\#(String(repeating: "c", count: 257))","up_to":"1"}"#, "fields.conversation"),
                (#""fields":{"conversation":"c","up_to":"\#(String(repeating: "9", count: 129))"}"#, "fields.up_to"),
                (#""fields":{"conversation":"c","up_to":1}"#, "fields.up_to"),
                (#""sound":"default","fields":{"conversation":"c","up_to":"1"}"#, "sound"),
            ]
            for (body, field) in cases {
                let r = try await send(client, .post, "/v1/events", #"{"template":"dismiss","targets":{"device_ids":["phone"]},\#(body)}"#, headers: publisher)
                let error = (try? json(r))?["error"] as? [String: Any]
                #expect([400, 422].contains(r.status.code) && error?["field"] as? String == field, "\(body): \(r.status) \(String(buffer: r.body))")
            }
            #expect(try await store.stats().deliveries.isEmpty)
        }
    }
}
