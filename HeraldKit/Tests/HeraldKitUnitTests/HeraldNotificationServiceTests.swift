import Foundation
import HeraldKit
import KasiaProtocol
import Testing

/// The extension's one call: a push in, its title and body out, and what the app must see stored
/// in the App Group's store; a push that fails its checks shows the generic text and stores nothing.
@Suite struct HeraldNotificationServiceTests {
    let cipher = KasiaCipher()

    /// A temporary App Group container.
    func withContainer(_ body: (URL) throws -> Void) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("heraldkit-nse-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try body(directory)
    }

    @Test("a Kasia message from a contact is shown decrypted under the contact's name and stored for the app; one without its payload is left for the app to fetch")
    func kasiaMessage() throws {
        try withContainer { directory in
            let me = try cipher.randomPrivateKey()
            let alice = try cipher.address(of: cipher.randomPrivateKey()).string
            let store = try SharedStore(directory: directory)
            try store.setContacts([Contact(address: alice, name: "Alice")])
            let service = HeraldNotificationService(store: store, resolver: try NotificationContentResolver(cipher: cipher), privateKey: me)
            let sealed = try cipher.encrypt("Hey!", to: cipher.address(of: me))
            let payload = Hex.encode(KasiaPayload.contextualMessagePayload(alias: "a1b2c3d4e5f6", sealed: sealed))
            func userInfo(_ txID: String, payload: String?) -> [AnyHashable: Any] {
                ["aps": ["alert": ["title": "New message", "body": "New message"], "mutable-content": 1],
                 "kasia": ["type": "contextual_message", "txId": txID, "sender": alice, "payload": payload as Any, "timestamp": 1_750_000_000, "daaScore": 9]]
            }
            let (shown, rejection) = service.handle(userInfo: userInfo("tx-1", payload: payload))
            #expect(shown.title == "Alice" && shown.body == "Hey!" && rejection == nil)
            #expect(try store.consumeMessages().map(\.plaintext) == ["Hey!"])
            let (pending, _) = service.handle(userInfo: userInfo("tx-2", payload: nil))
            #expect(pending.title == "Alice" && pending.body == "New message")
            #expect(try store.contents().pendingFetches.map(\.txID) == ["tx-2"])
        }
    }

    @Test("with a pinned key, a push without Herald's signature shows the generic text, says why, and stores nothing")
    func unsignedRefused() throws {
        try withContainer { directory in
            let store = try SharedStore(directory: directory)
            let pinned = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"  // an Ed25519 public key, base64url
            var service = try #require(HeraldNotificationService.appGroup(directory, curve: LibSecp256k1(), pinnedKey: pinned))
            // Before a key is pinned nothing is shown either: no check, no content.
            let unpinned = try #require(HeraldNotificationService.appGroup(directory, curve: LibSecp256k1()))
            #expect(unpinned.handle(fcmData: ["title": "Alice", "body": "forged"]).rejection == .unsigned)
            service.genericText = "Something new"
            let userInfo: [AnyHashable: Any] = [
                "aps": ["alert": ["title": "Alice", "body": "forged"]],
                "kasia": ["type": "contextual_message", "txId": "tx-3", "sender": "kaspa:qq", "payload": NSNull(), "timestamp": 1, "daaScore": 1],
            ]
            let (shown, rejection) = service.handle(userInfo: userInfo)
            #expect(shown.body == "Something new" && shown.title.isEmpty)
            #expect(rejection == .notSealed, "\(String(describing: rejection))")
            #expect(try store.contents().pendingFetches.isEmpty && store.contents().messages.isEmpty)
        }
    }

    @Test("the push's presentation comes out beside its text: thread, category, sound, interruption level, relevance, badge; a push that failed its checks keeps how it rings and no thread")
    func presentation() throws {
        try withContainer { directory in
            let aps: [String: Any] = [
                "alert": ["title": "Build finished", "body": "main is green"], "thread-id": "builds", "category": "agent.stop",
                "sound": "chime.caf", "interruption-level": "time-sensitive", "relevance-score": 0.5, "badge": 4,
            ]
            let open = HeraldNotificationService(store: try SharedStore(directory: directory), resolver: try NotificationContentResolver(cipher: cipher))
            let shown = open.handle(userInfo: ["aps": aps, "session_id": "s", "event_type": "stop"]).outcome
            #expect(shown.presentation == NotificationPresentation(
                threadIdentifier: "builds", category: "agent.stop", sound: "chime.caf", interruptionLevel: "time-sensitive", relevanceScore: 0.5, badge: 4))
            // Checked against a pinned key, the same push is unsealed and unsigned: refused, it shows
            // the generic text with the category and sound it came with, and no thread.
            let pinned = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
            let checked = try #require(HeraldNotificationService.appGroup(directory, curve: LibSecp256k1(), pinnedKey: pinned))
            let (refused, rejection) = checked.handle(userInfo: ["aps": aps, "session_id": "s", "event_type": "stop"])
            #expect(rejection != nil && refused.body == "New message")
            #expect(refused.presentation.threadIdentifier == nil && refused.presentation.category == "agent.stop" && refused.presentation.sound == "chime.caf")
            // Values out of Apple's ranges are not passed on.
            let odd = open.handle(userInfo: ["aps": ["alert": "x", "interruption-level": "loud", "relevance-score": 7, "badge": -1]]).outcome
            #expect(odd.presentation == NotificationPresentation())
        }
    }

    @Test("a push of another app's template keeps its alert; an Android data map reads as the APNs payload does")
    func otherTemplates() throws {
        try withContainer { directory in
            let service = HeraldNotificationService(store: try SharedStore(directory: directory), resolver: try NotificationContentResolver(cipher: cipher))
            let (shown, _) = service.handle(fcmData: ["title": "Build finished", "body": "main is green", "type": "agent.event"])
            #expect(shown.title == "Build finished" && shown.body == "main is green")
        }
    }
}
