import Foundation
import HeraldCore
import HeraldDelivery
import HeraldPushCore
import HeraldServer
import HeraldStore
import HeraldTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// `POST /v1/push/read` under the policies other than `wallet` (ReadMarkerDeliveryTests holds
/// that one end to end): whose devices a marker reaches, and what is refused before anything is recorded.
@Suite("Read markers: POST /v1/push/read", .serialized)
struct ReadMarkerAPITests {
    static func token(_ byte: String) -> String { String(repeating: byte, count: 32) }

    static func marker(_ token: String, conversation: String = "room-1", upTo: String = "42", issuedAt: Int64 = Int64(Date().timeIntervalSince1970)) -> String {
        #"{"device_token":"\#(token)","conversation":"\#(conversation)","up_to":"\#(upTo)","issued_at":\#(issuedAt)}"#
    }

    @Test("signed: the JWT's sub must own the calling device; its other devices with that identity are told, never the caller or another identity's")
    func signedSiblings() async throws {
        try await withRegistrationServer(configure: {
            $0.apps = .single(AppSettings(id: "default", publishKeys: ["pk"], registration: .signed(SignedRegistrationTests.keys)))
        }) { client, store in
            for (token, user) in [(Self.token("a1"), "d1"), (Self.token("b2"), "d1"), (Self.token("c3"), "d2")] {
                let r = try await send(client, .post, "/v1/push/register",
                    #"{"device_token":"\#(token)","platform":"ios","device_id":"\#(user)","watched_addresses":[]}"#,
                    headers: SignedRegistrationTests.headers(SignedRegistrationTests.jwt(sub: user, keys: [])))
                #expect(r.status == .ok, "\(String(buffer: r.body))")
            }
            let noJWT = try await send(client, .post, "/v1/push/read", Self.marker(Self.token("a1")))
            #expect(noJWT.status == .unauthorized)
            let otherIdentity = try await send(client, .post, "/v1/push/read", Self.marker(Self.token("a1")),
                headers: SignedRegistrationTests.headers(SignedRegistrationTests.jwt(sub: "d2", keys: [])))
            let otherError = try json(otherIdentity)["error"] as? [String: Any]
            #expect(otherIdentity.status == .forbidden && otherError?["field"] as? String == "device_token")
            #expect(try await store.dueDismissals(now: .distantFuture, limit: 10).isEmpty, "nothing armed by a refused marker")

            let r = try await send(client, .post, "/v1/push/read", Self.marker(Self.token("a1")),
                headers: SignedRegistrationTests.headers(SignedRegistrationTests.jwt(sub: "d1", keys: [])))
            let told = try json(r)["devices"] as? Int
            #expect(r.status == .accepted && told == 1, "\(String(buffer: r.body))")
            let armed = try await store.dueDismissals(now: .distantFuture, limit: 10)
            let b = try #require(try await store.devices(app: "default", tokens: [Self.token("b2")]).first)
            #expect(armed.map(\.deviceRowID) == [b.rowID] && armed.first?.upTo == "42" && armed.first?.conversation == "room-1")
        }
    }

    @Test("bad fields are refused naming them, a stale issued_at and a replay are 403, and none of them arms anything")
    func refusals() async throws {
        try await withRegistrationServer { client, store in
            for token in [Self.token("a1"), Self.token("b2")] {
                let r = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(token)","platform":"ios","device_id":"u","watched_addresses":[]}"#)
                #expect(r.status == .ok)
            }
            let now = Int64(Date().timeIntervalSince1970)
            let a = Self.token("a1")
            let cases: [(String, String, HTTPResponse.Status, String)] = [
                ("no conversation", #"{"device_token":"\#(a)","up_to":"1","issued_at":\#(now)}"#, .badRequest, "conversation"),
                ("a conversation of 257 characters", Self.marker(a, conversation: String(repeating: "c", count: 257)), .badRequest, "conversation"),
                ("a control character", Self.marker(a, conversation: #"room\u0000"#), .badRequest, "conversation"),
                ("an empty up_to", Self.marker(a, upTo: ""), .badRequest, "up_to"),
                ("an up_to of 129 characters", Self.marker(a, upTo: String(repeating: "9", count: 129)), .badRequest, "up_to"),
                ("issued_at as text", #"{"device_token":"\#(a)","conversation":"r","up_to":"1","issued_at":"now"}"#, .badRequest, "issued_at"),
                ("issued_at 11 minutes ago", Self.marker(a, issuedAt: now - 660), .forbidden, "issued_at"),
                ("issued_at 11 minutes ahead", Self.marker(a, issuedAt: now + 660), .forbidden, "issued_at"),
                ("a token nobody registered", Self.marker(Self.token("ee")), .forbidden, "device_token"),
            ]
            for (name, body, status, field) in cases {
                let r = try await send(client, .post, "/v1/push/read", body)
                #expect(r.status == status, "\(name): \(String(buffer: r.body))")
                #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == field, "\(name)")
            }
            #expect(try await store.dueDismissals(now: .distantFuture, limit: 10).isEmpty)
            let body = Self.marker(a, issuedAt: now)
            #expect(try await send(client, .post, "/v1/push/read", body).status == .accepted)
            let replay = try await send(client, .post, "/v1/push/read", body)
            let replayError = try json(replay)["error"] as? [String: Any]
            #expect(replay.status == .forbidden && replayError?["code"] as? String == "replayed_marker")
            #expect(try await store.dueDismissals(now: .distantFuture, limit: 10).count == 1)
        }
    }

    @Test("a dispatcher that died between committing a dismissal's push and marking it sent commits the same push again: the store keeps one, and the next dispatcher marks it sent")
    func crashBetweenCommitAndMark() async throws {
        try await withRegistrationServer { client, store in
            for token in [Self.token("a1"), Self.token("b2")] {
                let r = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(token)","platform":"ios","device_id":"u","watched_addresses":[]}"#)
                #expect(r.status == .ok)
            }
            #expect(try await send(client, .post, "/v1/push/read", Self.marker(Self.token("a1"))).status == .accepted)
            let apps = AppDirectory.single(AppSettings(id: "default", publishKeys: ["pk"]))
            let publisher = EventPublisher(store: store, apps: apps)
            let dispatcher = DismissalDispatcher(ledger: store, publisher: publisher, window: 10, clock: SystemClock(), logger: Logger(label: "test"))
            // The first dispatcher commits the push and dies before marking it sent.
            let due = try await store.dueDismissals(now: Date(), limit: 10)
            try #require(due.count == 1)
            let now = Date()
            #expect(try await store.enqueue([dispatcher.event(for: due[0], now: now)], checkpoint: nil, now: now).values.reduce(0, +) == 1)
            // The next one finds it due, commits it again (skipped as a duplicate), and marks it sent.
            #expect(try await dispatcher.dispatchDue() == 1)
            #expect(try await store.dueDismissals(now: Date().addingTimeInterval(3_600), limit: 10).isEmpty)
            let deliveries = try await store.claimDue(app: "default", platform: .ios, limit: 10, now: Date().addingTimeInterval(1), lease: .seconds(30))
            #expect(deliveries.count == 1 && deliveries.first?.template == "dismiss")
        }
    }
}
