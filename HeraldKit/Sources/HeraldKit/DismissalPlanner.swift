import Foundation
import KasiaProtocol

/// A conversation read on another device up to a position (SPEC §15): `herald.dismiss`'s
/// document `{"conversation", "up_to"}`, or an entry of an alert's ride-along `herald_dismiss` list.
public struct Dismissal: Hashable, Sendable {
    /// A contact's address, an alias, or the app's conversation id.
    public var conversation: String
    /// The app's own position (a DAA score, a timestamp, a message id): whole numbers compare as
    /// numbers, anything else as text.
    public var upTo: String

    public init(conversation: String, upTo: String) {
        self.conversation = conversation
        self.upTo = upTo
    }

    /// The member of an alert's document carrying the device's pending dismissals.
    public static let rideAlongMember = "herald_dismiss"

    /// The dismissals a verified document carries: a `herald.dismiss` document's own, and an
    /// alert's ride-along list (at most 32 read; entries that are not a conversation and a
    /// position are skipped).
    public static func all(in document: [UInt8]) -> [Dismissal] {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(document))) as? [String: Any] else { return [] }
        var out: [Dismissal] = []
        if let own = Dismissal(object) { out.append(own) }
        for entry in ((object[rideAlongMember] as? [Any]) ?? []).prefix(32) {
            if let dismissal = (entry as? [String: Any]).flatMap(Dismissal.init) { out.append(dismissal) }
        }
        return out
    }

    init?(_ object: [String: Any]) {
        guard let conversation = object["conversation"] as? String, !conversation.isEmpty, let upTo = object["up_to"] as? String, !upTo.isEmpty
        else { return nil }
        self.init(conversation: conversation, upTo: upTo)
    }

    /// Whether `position` is at or below this dismissal's.
    func covers(_ position: String) -> Bool {
        if let mine = UInt64(upTo), let theirs = UInt64(position) { return theirs <= mine }
        if UInt64(upTo) != nil || UInt64(position) != nil { return false }  // a number and text do not compare
        return position <= upTo
    }
}

/// A notification the device shows: its identifier and what Herald's push said of it.
public struct DeliveredNotification: Hashable, Sendable {
    public var identifier: String
    /// The conversation `HeraldNotificationService` left in `userInfo`, else a Kasia push's sender.
    public var conversation: String?
    /// The alias of a Kasia message's inline payload (a push of an app with `privacy: minimal`
    /// names no sender: its contact is found by alias).
    public var alias: String?
    /// Where it stands in its conversation: `herald_position`, else a Kasia push's DAA score.
    public var position: String?

    public init(identifier: String, conversation: String?, alias: String? = nil, position: String?) {
        self.identifier = identifier
        self.conversation = conversation
        self.alias = alias
        self.position = position
    }

    /// Read from the notification's `userInfo` (`UNNotification.request.content.userInfo`).
    public init(identifier: String, userInfo: [AnyHashable: Any]) {
        let kasia = userInfo["kasia"] as? [String: Any]
        var alias: String?
        if let hex = kasia?["payload"] as? String, case .contextualMessage(let found, _)? = KasiaPayload(hex: hex) { alias = found }
        let daaScore = (kasia?["daaScore"] as? NSNumber).map { "\($0.uint64Value)" }
        self.init(
            identifier: identifier, conversation: userInfo[NotificationConversation.userInfoKey] as? String ?? kasia?["sender"] as? String,
            alias: alias, position: userInfo[Self.positionKey] as? String ?? daaScore)
    }

    /// Where an app that is not Kasia leaves a notification's position in `userInfo`.
    public static let positionKey = "herald_position"
}

/// What to take off the screen for some dismissals, and the badge after.
public struct DismissalPlan: Hashable, Sendable {
    /// The identifiers to remove (`removeDeliveredNotifications(withIdentifiers:)`).
    public var remove: [String]
    /// The notifications left: the app's badge.
    public var badge: Int
}

/// Decides which delivered notifications a dismissal takes away: those of its conversation (by
/// id, by the contact whose address it is, or by one of that contact's aliases) at or below its
/// position; later ones, other conversations' and those without a position stay.
public struct DismissalPlanner: Sendable {
    public var contacts: [Contact]

    public init(contacts: [Contact] = []) {
        self.contacts = contacts
    }

    public func plan(_ dismissals: [Dismissal], delivered: [DeliveredNotification]) -> DismissalPlan {
        var remove: [String] = []
        for notification in delivered {
            guard let position = notification.position else { continue }
            let names = self.names(of: notification)
            if dismissals.contains(where: { names.contains($0.conversation) && $0.covers(position) }) { remove.append(notification.identifier) }
        }
        return DismissalPlan(remove: remove, badge: delivered.count - remove.count)
    }

    /// Every name the notification's conversation goes by: its id, and its contact's address and aliases.
    private func names(of notification: DeliveredNotification) -> Set<String> {
        var names = Set([notification.conversation, notification.alias].compactMap { $0 })
        for contact in contacts where names.contains(contact.address) || notification.alias.map(contact.aliases.contains) == true {
            names.insert(contact.address)
            names.formUnion(contact.aliases)
        }
        return names
    }
}
