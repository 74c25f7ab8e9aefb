import HeraldAPNsCore
import KasiaProtocol

/// A Kasia transaction worth a push: the fields of the `kasia.*` templates.
public struct KasiaEvent: Hashable, Sendable {
    public typealias Kind = KasiaMessageKind

    public var kind: Kind
    public var txID: String
    public var sender: String
    public var recipient: String?
    public var alias: String?
    /// Hex of the whole transaction payload.
    public var payloadHex: String?
    /// Unix seconds.
    public var timestamp: Int64
    public var daaScore: UInt64
    /// Sompi (payments).
    public var amount: UInt64?

    public init(
        kind: Kind, txID: String, sender: String, recipient: String? = nil, alias: String? = nil,
        payloadHex: String? = nil, timestamp: Int64, daaScore: UInt64, amount: UInt64? = nil
    ) {
        self.kind = kind
        self.txID = txID
        self.sender = sender
        self.recipient = recipient
        self.alias = alias
        self.payloadHex = payloadHex
        self.timestamp = timestamp
        self.daaScore = daaScore
        self.amount = amount
    }
}

/// What an app's pushes show the push services (Apple, Google, a Web Push service), which can read
/// every push in clear.
public enum PushPrivacy: String, Sendable, Hashable, CaseIterable {
    /// The apps' documented pushes: a Kasia push names the sender (alert, `thread-id`, `sender`)
    /// and a payment's amount.
    case standard
    /// Only what the app needs to fetch and decrypt: a Kasia push carries the transaction id,
    /// its kind, the encrypted payload, the time and DAA score, and a generic alert ("New
    /// message"); no sender, amount or thread id. The app resolves the sender itself.
    case minimal
}

/// The `kasia.handshake`, `kasia.contextual_message` and `kasia.payment` templates.
public enum KasiaTemplate {
    /// The alert of a push under `PushPrivacy.minimal`, whatever the kind.
    public static let minimalAlert = "New message"

    /// The payload travels inline only up to this many hex characters (reference: ≤ 3.5 KB).
    public static let maximumInlinePayloadCharacters = 3_500

    /// Renders the push; pure.
    ///
    /// `payload` is inline when it is at most 3,500 characters and the whole push still fits
    /// 4,096 bytes; otherwise `null`, and the app fetches the transaction itself. Under
    /// `.minimal` privacy the sender, the amount and the thread id stay out, and the alert is
    /// generic.
    public static func render(_ event: KasiaEvent, privacy: PushPrivacy = .standard) -> RenderedPush {
        let minimal = privacy == .minimal
        let alert: JSONValue =
            if minimal {
                .object([.init("title", .string(minimalAlert))])
            } else {
                .object([.init("title", .string(alert(for: event).title)), .init("body", .string(alert(for: event).body))])
            }
        func payload(inline: Bool) -> [UInt8] {
            var kasia: [JSONValue.Field] = [.init("type", .string(event.kind.rawValue)), .init("txId", .string(event.txID))]
            if !minimal { kasia.append(.init("sender", .string(event.sender))) }
            kasia += [
                .init("payload", inline ? event.payloadHex.map(JSONValue.string) ?? .null : .null),
                .init("timestamp", .int(event.timestamp)),
                .init("daaScore", .unsigned(event.daaScore)),
            ]
            if let amount = event.amount, !minimal { kasia.append(.init("amount", .unsigned(amount))) }
            var aps: [JSONValue.Field] = [.init("alert", alert), .init("mutable-content", .int(1)), .init("content-available", .int(1))]
            if !minimal { aps.append(.init("thread-id", .string(event.sender))) }
            return JSONValue.object([.init("aps", .object(aps)), .init("kasia", .object(kasia))]).encoded
        }
        var bytes = payload(inline: false)
        if let hex = event.payloadHex, hex.utf8.count <= maximumInlinePayloadCharacters {
            let inline = payload(inline: true)
            if inline.count <= RenderedPush.maximumAlertSize { bytes = inline }
        }
        return RenderedPush(pushType: .alert, priority: .immediate, collapseID: event.txID, payload: bytes)
    }

    /// The alert's title and body.
    public static func alert(for event: KasiaEvent) -> (title: String, body: String) {
        let from = KasiaText.shortAddress(event.sender)
        switch event.kind {
        case .contextualMessage:
            return ("New Message", "From \(from)")
        case .handshake:
            return ("New Contact Request", "From \(from)")
        case .payment:
            guard let amount = event.amount else { return ("Payment Received", "From \(from)") }
            return ("Payment Received", "\(KasiaText.kas(sompi: amount)) KAS from \(from)")
        }
    }
}
