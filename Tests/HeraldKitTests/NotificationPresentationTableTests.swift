import Foundation
import HeraldCore
import HeraldDelivery
import HeraldKit
import HeraldPushCore
import HeraldTestSupport
import KasiaProtocol
import Testing

/// What the extension makes of every Kasia push Herald renders — each kind, under each privacy,
/// sealed or not, checked or not — as a notification presentation: the conversation, thread,
/// sender and summary name from what the phone resolved; how it rings from the push; and for a
/// push that fails its checks, how it rings and nothing that names anyone.
@Suite("Notification presentation: every Kasia kind × privacy × sealing × check")
struct NotificationPresentationTableTests {
    static let now: Int64 = 1_764_000_000
    let cipher = KasiaCipher()

    /// `push` as a phone gets it from `sealing` (sealed when `sealed`), handled by the extension:
    /// checked against the app's key (`verified`) or another's. An unsealed APNs push reaches the
    /// extension parsed, without the bytes its signature covers: an app that pins a key cannot check
    /// it (refused), one that does not reads it as it comes.
    func handled(
        _ push: RenderedPush, template: String, sealing: PushSealing, sealed: Bool, verified: Bool, contacts: [Contact] = [],
        privateKey: KasiaPrivateKey? = nil
    ) throws -> (outcome: NotificationOutcome, rejection: PushRejection?, payload: [UInt8]) {
        let keys = SealedPushKeys()
        var attributes = DeviceAttributes(production: true)
        if sealed { attributes = try DevicePushKeys(p256dh: keys.p256dh, auth: keys.authSecret).stored(in: attributes) }
        var signatures = SignedDocuments()
        let prepared = sealing.prepare(push, for: attributes, template: template, issuedAt: Self.now, limit: 4_096, signatures: &signatures)
        let userInfo = try #require(try JSONSerialization.jsonObject(with: Data(prepared.payload)) as? [String: Any])
        let pinned = verified ? sealing.signingKey.publicKeyBase64URL : PushSigningKey().publicKeyBase64URL
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-table-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SharedStore(directory: directory)
        try store.setContacts(contacts)
        let authenticator = try PushAuthenticator(
            pinnedKey: pinned, keys: sealed ? keys : nil, clock: ManualClock(Date(timeIntervalSince1970: TimeInterval(Self.now))))
        let service = HeraldNotificationService(
            store: store, resolver: try NotificationContentResolver(cipher: cipher), authenticator: sealed || !verified ? authenticator : nil,
            privateKey: privateKey)
        let (outcome, rejection) = service.handle(userInfo: userInfo)
        return (outcome, rejection, prepared.payload)
    }

    @Test(arguments: KasiaEvent.Kind.allCases, PushPrivacy.allCases)
    func presentation(kind: KasiaEvent.Kind, privacy: PushPrivacy) throws {
        let wallet = try cipher.randomPrivateKey()
        let me = try cipher.address(of: wallet)
        let aliceKey = try cipher.randomPrivateKey()
        let alice = try cipher.address(of: aliceKey).string
        let alias = "a1b2c3d4e5f6"
        let sealedText = try cipher.encrypt("Hey!", to: me)
        let payload: [UInt8] =
            switch kind {
            case .contextualMessage: KasiaPayload.contextualMessagePayload(alias: alias, sealed: sealedText)
            case .handshake: KasiaPayload.handshakePayload(sealed: sealedText)
            case .payment: KasiaPayload.paymentPayload(sealed: sealedText)
            }
        let event = KasiaEvent(
            kind: kind, txID: String(repeating: "7a", count: 32), sender: alice, recipient: me.string, alias: kind == .contextualMessage ? alias : nil,
            payloadHex: Hex.encode(payload), timestamp: 1_750_000_000, daaScore: 9, amount: kind == .payment ? 150_000_000 : nil)
        let signingKey = PushSigningKey()
        var app = AppSettings(id: "kasia")
        app.privacy = privacy
        app.sealing = PushSealing(signingKey: signingKey)
        let rendered = app.render(event)
        let category = "kasia." + (kind == .contextualMessage ? "message" : kind.rawValue)
        // Whom the phone can name: the sender the push names (standard), or under minimal the
        // contact whose alias the message carries; a minimal handshake or payment names no one.
        let named = privacy == .standard || kind == .contextualMessage

        for sealed in [false, true] {
            for verified in [false, true] {
                let (outcome, rejection, payload) = try handled(
                    rendered, template: "kasia." + kind.rawValue, sealing: app.sealing!, sealed: sealed, verified: verified,
                    contacts: [Contact(address: alice, name: "Alice", aliases: [alias], avatar: "avatars/alice.png")], privateKey: wallet)
                let shown = outcome.presentation
                let label = "\(kind) \(privacy) sealed=\(sealed) verified=\(verified)"
                // How it rings comes through either way: sealed, it travels outside the seal.
                #expect(shown.category == category && shown.sound == "default", "\(label)")
                if !verified {
                    #expect(rejection != nil && outcome.body == "New message" && outcome.title.isEmpty, "\(label)")
                    #expect(shown.threadIdentifier == nil && shown.sender == nil && shown.conversation == nil && shown.summaryArgument == nil, "\(label)")
                    continue
                }
                #expect(rejection == nil, "\(label)")
                if named {
                    #expect(shown.conversation == NotificationConversation(id: alice), "\(label)")
                    #expect(shown.threadIdentifier == alice, "\(label)")
                    #expect(shown.sender == NotificationPerson(handle: alice, displayName: "Alice", avatar: "avatars/alice.png"), "\(label)")
                    #expect(shown.summaryArgument == "Alice", "\(label)")
                } else {
                    // Grouped by the opaque id the push carried: the same for every push of the conversation, not the address.
                    #expect(shown.conversation == nil && shown.sender == nil, "\(label)")
                    #expect(shown.threadIdentifier == signingKey.opaqueThreadID(alice) && shown.threadIdentifier != alice, "\(label)")
                }
                // Apple never sees the thread of a sealed push, nor the address of a minimal one.
                let outer = String(decoding: payload, as: UTF8.self)
                if sealed { #expect(!outer.contains("thread-id") && !outer.contains(alice), "\(label)") }
                if privacy == .minimal { #expect(!outer.contains(alice), "\(label)") }
            }
        }
    }

    /// The other templates' alerts as Herald renders them, with every presentation key an event can set.
    static let otherTemplates: [(String, String)] = [
        ("session.message", #"{"aps":{"alert":{"title":"New Message","body":"You have a new message"},"badge":1,"sound":"default","category":"ghost.message","thread-id":"s1"},"session_id":"s1","message_id":"m1","timestamp":1700000000,"encrypted":true,"has_attachment":false}"#),
        ("agent.event", #"{"aps":{"alert":{"title":"Permission needed","body":"Bash on mac"},"sound":"chime.caf","interruption-level":"time-sensitive","relevance-score":0.75,"thread-id":"s2"},"session_id":"s2","device_name":"mac","event_type":"Notification"}"#),
        ("custom", #"{"aps":{"alert":{"title":"T","body":"B"},"sound":"alarm.caf","category":"my.own","interruption-level":"passive","relevance-score":1,"badge":99999,"thread-id":"room"},"k":"v"}"#),
    ]

    @Test("the other templates: a checked push presents as its document says; one that fails keeps how it rings, no thread", arguments: otherTemplates.map(\.0))
    func otherTemplate(template: String) throws {
        let document = try #require(Self.otherTemplates.first { $0.0 == template }?.1)
        let aps = try #require((try JSONSerialization.jsonObject(with: Data(document.utf8)) as? [String: Any])?["aps"])
        let expected = NotificationPresentation(aps: aps)
        #expect(expected.threadIdentifier != nil && expected.sound != nil)
        let sealing = PushSealing(signingKey: PushSigningKey())
        for sealed in [false, true] {
            for verified in [false, true] {
                let (outcome, rejection, _) = try handled(
                    RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(document.utf8)), template: template,
                    sealing: sealing, sealed: sealed, verified: verified)
                let label = "\(template) sealed=\(sealed) verified=\(verified)"
                if verified {
                    #expect(rejection == nil && outcome.presentation == expected, "\(label): \(outcome.presentation)")
                } else {
                    var rings = expected
                    rings.threadIdentifier = nil
                    #expect(rejection != nil && outcome.presentation == rings && outcome.body == "New message", "\(label): \(outcome.presentation)")
                }
            }
        }
    }
}
