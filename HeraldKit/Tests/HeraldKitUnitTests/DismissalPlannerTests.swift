import Foundation
import HeraldKit
import KasiaProtocol
import Testing

/// What a dismissal takes off the screen (SPEC §15): a conversation's notifications at or below its
/// position, found by id, by contact or by alias, and the badge after.
@Suite struct DismissalPlannerTests {
    static let alice = "kaspa:qalice", bob = "kaspa:qbob"
    let planner = DismissalPlanner(contacts: [Contact(address: alice, name: "Alice", aliases: ["a1b2c3d4e5f6"]), Contact(address: bob, name: "Bob")])

    static func message(_ id: String, sender: String?, daaScore: UInt64, alias: String? = nil) -> DeliveredNotification {
        var kasia: [String: Any] = ["type": "contextual_message", "txId": id, "daaScore": daaScore]
        if let sender { kasia["sender"] = sender }
        if let alias { kasia["payload"] = Hex.encode(KasiaPayload.contextualMessagePayload(alias: alias, sealed: Array(repeating: 2, count: 61))) }
        return DeliveredNotification(identifier: id, userInfo: ["aps": ["alert": "x"], "kasia": kasia])
    }

    @Test("the table: at or below up_to removed; later, other conversations' and position-less kept; badge the rest")
    func table() {
        let delivered = [
            Self.message("a1", sender: Self.alice, daaScore: 100), Self.message("a2", sender: Self.alice, daaScore: 200),
            Self.message("a3", sender: Self.alice, daaScore: 201), Self.message("b1", sender: Self.bob, daaScore: 50),
            Self.message("m1", sender: nil, daaScore: 150, alias: "a1b2c3d4e5f6"),  // privacy: minimal, Alice's alias
            Self.message("m2", sender: nil, daaScore: 150, alias: "ffffffffffff"),  // an alias of nobody's
            DeliveredNotification(identifier: "s1", userInfo: [NotificationConversation.userInfoKey: Self.alice]),  // no position
        ]
        let rows: [([Dismissal], [String])] = [
            ([Dismissal(conversation: Self.alice, upTo: "200")], ["a1", "a2", "m1"]),
            ([Dismissal(conversation: "a1b2c3d4e5f6", upTo: "200")], ["a1", "a2", "m1"]),  // by alias: the same conversation
            ([Dismissal(conversation: Self.alice, upTo: "99")], []),
            ([Dismissal(conversation: Self.bob, upTo: "50"), Dismissal(conversation: Self.alice, upTo: "100")], ["a1", "b1"]),
            ([Dismissal(conversation: "kaspa:qcarol", upTo: "1000")], []),
            ([Dismissal(conversation: Self.alice, upTo: "not-a-number")], []),  // a number and text do not compare
        ]
        for (dismissals, removed) in rows {
            let plan = planner.plan(dismissals, delivered: delivered)
            #expect(plan.remove == removed, "\(dismissals)")
            #expect(plan.badge == delivered.count - removed.count)
        }
    }

    @Test("positions that are not numbers compare as text; the conversation HeraldNotificationService left wins over the sender")
    func textPositions() {
        let delivered = [
            DeliveredNotification(identifier: "1", userInfo: [NotificationConversation.userInfoKey: "room-7", DeliveredNotification.positionKey: "2026-11-28T10:00:00Z"]),
            DeliveredNotification(identifier: "2", userInfo: [NotificationConversation.userInfoKey: "room-7", DeliveredNotification.positionKey: "2026-11-28T11:00:00Z"]),
        ]
        #expect(planner.plan([Dismissal(conversation: "room-7", upTo: "2026-11-28T10:30:00Z")], delivered: delivered).remove == ["1"])
    }

    @Test("a verified document's dismissals: a herald.dismiss document's own and an alert's ride-along list, at most 32, malformed entries skipped")
    func fromDocuments() {
        #expect(Dismissal.all(in: Array(#"{"conversation":"kaspa:qalice","up_to":"200"}"#.utf8)) == [Dismissal(conversation: Self.alice, upTo: "200")])
        let entries = (0..<40).map { #"{"conversation":"c\#($0)","up_to":"\#($0)"}"# } + [#"{"conversation":""}"#, "7"]
        let alert = #"{"aps":{"alert":"x"},"herald_dismiss":[\#(entries.joined(separator: ","))]}"#
        let found = Dismissal.all(in: Array(alert.utf8))
        #expect(found.count == 32 && found.first == Dismissal(conversation: "c0", upTo: "0"))
        #expect(Dismissal.all(in: Array("not json".utf8)).isEmpty)
    }
}
