import Foundation
import HeraldCore
import HeraldDelivery
import HeraldKit
import HeraldPushCore
import HeraldTestSupport
import KasiaProtocol
import PushSigning
import Testing

/// HeraldKit's web half (`HeraldKit/Web/herald-push.js`) on the vectors this suite makes with
/// Herald's own sealing and HeraldKit's verdicts: in Node's test runner and in headless Chromium,
/// it must accept what `PushAuthenticator` accepts (the same document, byte for byte), refuse what
/// it refuses for the same reason, and show each document as HeraldKit presents it.
@Suite("The web module: herald-push.js in Node and Chromium", .serialized)
struct WebModuleTests {
    static let now: Int64 = 1_764_000_000
    static let web = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Web")
    static let module = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("HeraldKit/Web/herald-push.js")
    static let sender = "kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj"

    /// The vectors: pushes with HeraldKit's verdict, documents with HeraldKit's presentation.
    static func vectors() throws -> [String: Any] {
        let key = PushSigningKey()
        let pinned = key.publicKeyBase64URL
        let sealing = PushSealing(signingKey: key)
        func signed(_ document: String, at time: Int64 = now) -> [UInt8] {
            var signatures = SignedDocuments()
            let push = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(document.utf8))
            return sealing.prepare(push, for: DeviceAttributes(production: true), issuedAt: time, limit: 4_096, signatures: &signatures).payload
        }
        var app = AppSettings(id: "kasia")
        app.sealing = sealing
        let message = KasiaEvent(kind: .contextualMessage, txID: String(repeating: "ab", count: 32), sender: sender, alias: "a1b2c3d4e5f6", payloadHex: "ab", timestamp: 1, daaScore: 2)
        let kasiaDocument = String(decoding: app.render(message).payload, as: UTF8.self)
        app.privacy = .minimal
        let payment = KasiaEvent(kind: .payment, txID: String(repeating: "cd", count: 32), sender: sender, timestamp: 1, daaScore: 2, amount: 5)
        let minimalDocument = String(decoding: app.render(payment).payload, as: UTF8.self)
        let custom = #"{"aps":{"alert":{"title":"Grüße","body":"4 KAS ☕"},"badge":7,"sound":"none","category":"my.own"},"note":"\"herald_signature\":\"1.AAAA\""}"#

        var valid = signed(kasiaDocument)
        var flipped = valid
        flipped[30] ^= 0x01
        let attached = try #require(SignedPush(signing: Array("{}".utf8), issuedAt: now, with: key.privateKey).attached)
        var shortSignature = Array(String(decoding: attached, as: UTF8.self).replacing(/\.[A-Za-z0-9_-]+"\}$/, with: ".AAAA\"}").utf8)
        let badCharacter = Array(String(decoding: attached, as: UTF8.self).replacing(/\.([A-Za-z0-9_-])/, with: ".+").utf8)
        let cases: [(String, [UInt8], String, Int64)] = [
            ("a Kasia message", valid, pinned, now), ("a minimal Kasia payment", signed(minimalDocument), pinned, now),
            ("a custom push, UTF-8 and a look-alike member", signed(custom), pinned, now), ("an empty document", attached, pinned, now),
            ("a changed byte", flipped, pinned, now), ("another key", valid, PushSigningKey().publicKeyBase64URL, now),
            ("a day and a second old", valid, pinned, now + 86_401), ("five minutes and a second ahead", valid, pinned, now - 301),
            ("unsigned", Array(kasiaDocument.utf8), pinned, now), ("a signature of four characters", shortSignature, pinned, now),
            ("a signature with a character outside base64url", badCharacter, pinned, now),
            ("nothing", [], pinned, now), ("not JSON", Array("herald".utf8), pinned, now),
        ]
        var pushes: [[String: Any]] = []
        for (name, payload, key, time) in cases {
            let authenticator = try PushAuthenticator(pinnedKey: key, keys: nil, clock: ManualClock(Date(timeIntervalSince1970: TimeInterval(time))))
            var vector: [String: Any] = ["name": name, "payload": Base64URLText.encode(payload), "pinned": key, "now": time, "document": NSNull(), "error": NSNull()]
            do { vector["document"] = Base64URLText.encode(try authenticator.document(payload: payload)) } catch { vector["error"] = error.rawValue }
            pushes.append(vector)
        }
        _ = (valid.removeLast(), shortSignature.removeLast())

        // Each document as HeraldKit presents it: the thread is the notification's tag, the category its actions.
        let categories = Dictionary(uniqueKeysWithValues: NotificationCategory.kasiaSet.map { ($0.identifier, $0.actions.map(\.identifier)) })
        var notifications: [[String: Any]] = []
        for (name, document) in [("a Kasia message", kasiaDocument), ("a minimal Kasia payment", minimalDocument), ("a custom push", custom),
                                 ("an alert string", #"{"aps":{"alert":"hi"}}"#), ("not an object", "[1]")] {
            let object = (try? JSONSerialization.jsonObject(with: Data(document.utf8))) as? [String: Any]
            let presentation = NotificationPresentation(aps: object?["aps"])
            let alert = (object?["aps"] as? [String: Any])?["alert"]
            let title = (alert as? [String: Any])?["title"] as? String ?? "New message"
            let body = (alert as? [String: Any])?["body"] as? String ?? alert as? String ?? ""
            notifications.append(["name": name, "document": Base64URLText.encode(Array(document.utf8)), "expect": [
                "title": title, "body": body, "tag": presentation.threadIdentifier as Any? ?? NSNull(),
                "actions": presentation.category.flatMap { categories[$0] } ?? [], "silent": presentation.sound == "none",
                "badge": presentation.badge as Any? ?? NSNull(),
            ] as [String: Any]])
        }
        // Dismissals: what HeraldKit's `Dismissal.all(in:)` reads from a document, and whether its
        // planner takes a shown notification away (the web's conversation is the thread id, else the sender).
        let entries = (0..<40).map { #"{"conversation":"c\#($0)","up_to":"\#($0)"}"# }.joined(separator: ",")
        var dismissals: [[String: Any]] = []
        for (name, document) in [
            ("a dismiss document", #"{"aps":{"content-available":1},"conversation":"room-7","up_to":"42"}"#),
            ("an alert's ride-along, 40 entries and a malformed one", #"{"aps":{"alert":"x"},"herald_dismiss":[{"conversation":""},\#(entries)]}"#),
            ("nothing to dismiss", #"{"aps":{"alert":"x"}}"#), ("not an object", "[1]"),
        ] {
            let found = Dismissal.all(in: Array(document.utf8)).map { ["conversation": $0.conversation, "up_to": $0.upTo] }
            dismissals.append(["name": name, "document": Base64URLText.encode(Array(document.utf8)), "expect": found])
        }
        var planner: [[String: Any]] = []
        let shown: [(String, String)] = [
            ("Alice's message at 100", #"{"aps":{"alert":"x","thread-id":"kaspa:qalice"},"kasia":{"sender":"kaspa:qalice","daaScore":100}}"#),
            ("a minimal message at 100", #"{"aps":{"alert":"x","thread-id":"opaque"},"kasia":{"daaScore":100}}"#),
            ("a room's message at a time", #"{"aps":{"alert":"x","thread-id":"room-7"},"herald_position":"2026-11-28T10:00:00Z"}"#),
            ("no position", #"{"aps":{"alert":"x","thread-id":"room-7"}}"#),
        ]
        for (name, document) in shown {
            for (conversation, upTo) in [("kaspa:qalice", "100"), ("kaspa:qalice", "99"), ("opaque", "150"), ("room-7", "2026-11-28T11:00:00Z"), ("room-7", "42")] {
                var userInfo = try #require(try JSONSerialization.jsonObject(with: Data(document.utf8)) as? [String: Any])
                if let thread = (userInfo["aps"] as? [String: Any])?["thread-id"] { userInfo[NotificationConversation.userInfoKey] = thread }
                let plan = DismissalPlanner().plan([Dismissal(conversation: conversation, upTo: upTo)], delivered: [DeliveredNotification(identifier: "n", userInfo: userInfo)])
                planner.append([
                    "name": "\(name), \(conversation) up to \(upTo)", "shown": Base64URLText.encode(Array(document.utf8)), "conversation": conversation,
                    "up_to": upTo, "expect": plan.remove == ["n"],
                ])
            }
        }
        return ["pushes": pushes, "notifications": notifications, "dismissals": dismissals, "planner": planner]
    }

    /// The module, the runner and the vectors (as JSON and as a module) in a scratch folder.
    static func scratch() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-web-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let json = try JSONSerialization.data(withJSONObject: try vectors(), options: [.sortedKeys])
        try json.write(to: directory.appendingPathComponent("vectors.json"))
        try Data(("export default " + String(decoding: json, as: UTF8.self) + ";\n").utf8).write(to: directory.appendingPathComponent("vectors.js"))
        for file in ["run-vectors.mjs", "chromium.html"] {
            try FileManager.default.copyItem(at: web.appendingPathComponent(file), to: directory.appendingPathComponent(file))
        }
        try FileManager.default.copyItem(at: module, to: directory.appendingPathComponent("herald-push.js"))
        return directory
    }

    @Test("Node's test runner: every vector's verdict and notification agree with HeraldKit's")
    func node() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = try await runProcessOffPool(
            URL(fileURLWithPath: "/usr/bin/env"), ["node", "--test", Self.web.appendingPathComponent("herald-push.test.mjs").path],
            environment: ProcessInfo.processInfo.environment.merging(["HERALD_WEB_VECTORS": directory.appendingPathComponent("vectors.json").path]) { _, new in new })
        let text = String(decoding: output.stdout + output.stderr, as: UTF8.self)
        #expect(output.status == 0, "\(text)")
        #expect(text.contains("# pass 2") && text.contains("# fail 0"), "\(text)")
    }

    @Test("headless Chromium: the same vectors, the same verdicts, WebCrypto's Ed25519")
    func chromium() async throws {
        let directory = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = try await runProcessOffPool(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["timeout", "120", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files", "--virtual-time-budget=20000",
             "--user-data-dir=" + directory.appendingPathComponent("profile").path, "--dump-dom", directory.appendingPathComponent("chromium.html").absoluteString])
        let dom = String(decoding: output.stdout, as: UTF8.self)
        let verdict = try #require(dom.firstMatch(of: /<pre id="verdict">([^<]*)<\/pre>/)?.output.1, "chromium printed: \(dom.prefix(2_000)) \(String(decoding: output.stderr, as: UTF8.self).suffix(2_000))")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(String(verdict).replacing("&quot;", with: "\"").replacing("&amp;", with: "&").utf8)) as? [String: Any], "\(verdict)")
        let vectors = try Self.vectors()
        #expect(answer["checked"] as? Int == ["pushes", "notifications", "dismissals", "planner"].map { (vectors[$0] as! [Any]).count }.reduce(0, +), "\(answer)")
        #expect(answer["disagreements"] as? [String] == [], "\(answer)")
    }
}
