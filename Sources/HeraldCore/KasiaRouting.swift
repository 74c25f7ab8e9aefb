import KasiaProtocol
/// Which devices a Kasia event reaches when its publisher names no targets.
///
/// A store looks devices up by `lookupKey` (an index on watch keys), then keeps those whose
/// watch set `accepts` the event.
public enum KasiaRouting {
    /// The address whose watchers are candidates: the recipient for handshakes and payments,
    /// the sender for contextual messages. Nil when the event lacks it.
    public static func lookupKey(for event: KasiaEvent) -> String? {
        switch event.kind {
        case .handshake, .payment: event.recipient
        case .contextualMessage: event.sender
        }
    }

    /// Whether a device with `watchSet` should get `event`.
    ///
    /// - Handshake and payment: the recipient is among the device's own `addresses`; a device
    ///   that registered none counts its `watched_addresses`, as in the reference — unless
    ///   `proven`, where own addresses are proven by the wallet's signature (the `wallet` policy)
    ///   and only they count: watching someone's address never brings their payments.
    /// - Contextual message: the device follows the sender (watches it, or has routes for it);
    ///   with routes for that sender, only a message whose alias is in them. When `proven`, only
    ///   routes count: a conversation's messages reach those who know its alias, as Kasia intends.
    public static func accepts(_ event: KasiaEvent, watchSet: WatchSet, proven: Bool = false) -> Bool {
        switch event.kind {
        case .handshake, .payment:
            guard let recipientText = event.recipient, let recipient = try? KaspaAddress(recipientText) else { return false }
            return watchSet.own.isEmpty && !proven
                ? watchSet.watched.contains(.kaspaAddress(recipient))
                : watchSet.own.contains(recipient)
        case .contextualMessage:
            guard let sender = try? KaspaAddress(event.sender) else { return false }
            if let aliases = watchSet.routes[sender] {
                guard let alias = event.alias else { return false }
                return aliases.contains(alias)
            }
            return !proven && watchSet.watched.contains(.kaspaAddress(sender))
        }
    }
}
