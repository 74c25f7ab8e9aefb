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

    /// `accepts` from what a device has of the event's lookup key alone (`KasiaRoutingFacts`), for
    /// a reader that looked the key up rather than the device's whole watch set: the same answer.
    public static func accepts(_ event: KasiaEvent, facts: KasiaRoutingFacts, proven: Bool = false) -> Bool {
        switch event.kind {
        case .handshake, .payment:
            return !facts.hasOwnAddresses && !proven ? facts.watchesKey : facts.ownsKey
        case .contextualMessage:
            if let aliases = facts.aliases {
                guard let alias = event.alias else { return false }
                return aliases.contains(alias)
            }
            return !proven && facts.watchesKey
        }
    }
}

/// What one device has of one address (a Kasia event's lookup key): enough for
/// `KasiaRouting.accepts(_:facts:proven:)`.
public struct KasiaRoutingFacts: Hashable, Sendable {
    /// It registered own addresses (any).
    public var hasOwnAddresses: Bool
    /// The address is one of its own.
    public var ownsKey: Bool
    /// It watches the address.
    public var watchesKey: Bool
    /// Its contextual-route aliases for the address as a peer; nil when it has no routes for it.
    public var aliases: Set<String>?

    public init(hasOwnAddresses: Bool = false, ownsKey: Bool = false, watchesKey: Bool = false, aliases: Set<String>? = nil) {
        self.hasOwnAddresses = hasOwnAddresses
        self.ownsKey = ownsKey
        self.watchesKey = watchesKey
        self.aliases = aliases
    }
}
