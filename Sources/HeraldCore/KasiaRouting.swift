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
    ///   that registered none counts its `watched_addresses`, as in the reference.
    /// - Contextual message: the device follows the sender (watches it, or has routes for it);
    ///   with routes for that sender, only a message whose alias is in them.
    public static func accepts(_ event: KasiaEvent, watchSet: WatchSet) -> Bool {
        switch event.kind {
        case .handshake, .payment:
            guard let recipientText = event.recipient, let recipient = try? KaspaAddress(recipientText) else { return false }
            return watchSet.own.isEmpty
                ? watchSet.watched.contains(.kaspaAddress(recipient))
                : watchSet.own.contains(recipient)
        case .contextualMessage:
            guard let sender = try? KaspaAddress(event.sender) else { return false }
            if let aliases = watchSet.routes[sender] {
                guard let alias = event.alias else { return false }
                return aliases.contains(alias)
            }
            return watchSet.watched.contains(.kaspaAddress(sender))
        }
    }
}
