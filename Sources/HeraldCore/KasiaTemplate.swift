import Foundation
import HeraldPushCore
public import KasiaProtocol

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
    /// What the phone checks the sender with (the chain source fills it when it knows the coin
    /// input 0 spends): travels only in sealed pushes, as `kasia.proof`.
    public var proof: KaspaTransactionProof?

    public init(
        kind: Kind, txID: String, sender: String, recipient: String? = nil, alias: String? = nil,
        payloadHex: String? = nil, timestamp: Int64, daaScore: UInt64, amount: UInt64? = nil, proof: KaspaTransactionProof? = nil
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
        self.proof = proof
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
    /// 4,096 bytes; otherwise `null`, and the app fetches the transaction itself. Every push rings
    /// (`sound: default`), has its kind's category (`notificationCategory`) and `presentation` over them,
    /// and is grouped by conversation: `thread-id` is the sender's address. Under `.minimal` privacy
    /// the sender, the amount and the address stay out, the alert is generic, and the thread is
    /// `opaqueThread` (a keyed hash of the sender the caller makes), or none.
    ///
    /// An event with a sender proof gets it as the last member of `kasia` (itself last), so
    /// that `withoutProof` gives, byte for byte, the push an unsealed device gets; the payload's
    /// fit to 4,096 bytes is judged without it (a sealed push shrinks on its own).
    public static func render(
        _ event: KasiaEvent, privacy: PushPrivacy = .standard, opaqueThread: String? = nil, presentation: PushPresentation = PushPresentation()
    ) -> RenderedPush {
        let minimal = privacy == .minimal
        let alert: JSONValue =
            if minimal {
                .object([.init("title", .string(minimalAlert))])
            } else {
                .object([.init("title", .string(alert(for: event).title)), .init("body", .string(alert(for: event).body))])
            }
        let proof = event.proof.flatMap(json(of:))
        func payload(inline: Bool, withProof: Bool = false) -> [UInt8] {
            var kasia: [JSONValue.Field] = [.init("type", .string(event.kind.rawValue)), .init("txId", .string(event.txID))]
            if !minimal { kasia.append(.init("sender", .string(event.sender))) }
            kasia += [
                .init("payload", inline ? event.payloadHex.map(JSONValue.string) ?? .null : .null),
                .init("timestamp", .int(event.timestamp)),
                .init("daaScore", .unsigned(event.daaScore)),
            ]
            if let amount = event.amount, !minimal { kasia.append(.init("amount", .unsigned(amount))) }
            if withProof, let proof { kasia.append(.init(proofKey, proof)) }
            var aps = presentation.applied(to: [
                .init("alert", alert), .init("mutable-content", .int(1)), .init("content-available", .int(1)),
                .init("sound", .string("default")), .init("category", .string(event.kind.notificationCategory)),
            ])
            if let thread = minimal ? opaqueThread : event.sender { aps.append(.init("thread-id", .string(thread))) }
            return JSONValue.object([.init("aps", .object(aps)), .init("kasia", .object(kasia))]).encoded
        }
        var inline = false
        var bytes = payload(inline: false)
        if let hex = event.payloadHex, hex.utf8.count <= maximumInlinePayloadCharacters {
            let withPayload = payload(inline: true)
            if withPayload.count <= RenderedPush.maximumAlertSize {
                bytes = withPayload
                inline = true
            }
        }
        if proof != nil { bytes = payload(inline: inline, withProof: true) }
        return RenderedPush(pushType: .alert, priority: .immediate, collapseID: event.txID, payload: bytes)
    }

    /// The member of `kasia` holding the sender proof.
    static let proofKey = "proof"

    /// The proof as JSON (`KaspaTransactionProof`'s coding, keys sorted).
    static func json(of proof: KaspaTransactionProof) -> JSONValue? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(proof)).flatMap { try? JSONValue(parsing: Array($0)) }
    }

    /// `push` without its sender proof: what a device that is not sealed to gets, since the proof
    /// names the sender and the push services would read it. Only the layout `render` writes
    /// (the proof last in `kasia`, last in the push) is cut, byte for byte; any other push is
    /// returned as it is.
    public static func withoutProof(_ push: RenderedPush) -> RenderedPush {
        let marker = proofMarker
        let bytes = push.payload
        // Most pushes are not Kasia's: a byte search before any parse.
        guard bytes.count > marker.count + 2, bytes.suffix(2).elementsEqual("}}".utf8), let at = lastIndex(of: marker, in: bytes),
            let root = try? JSONValue(parsing: bytes), let proof = root[path: ["kasia", proofKey]], case .object = proof,
            at + marker.count + proof.encoded.count == bytes.count - 2,
            bytes[(at + marker.count)..<(bytes.count - 2)].elementsEqual(proof.encoded)
        else { return push }
        var stripped = push
        stripped.payload = Array(bytes[..<at]) + Array("}}".utf8)
        return stripped
    }

    static let proofMarker = Array(#","proof":"#.utf8)

    private static func lastIndex(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        var i = bytes.count - needle.count
        while i >= 0 {
            if bytes[i] == needle[0], bytes[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i -= 1
        }
        return nil
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
