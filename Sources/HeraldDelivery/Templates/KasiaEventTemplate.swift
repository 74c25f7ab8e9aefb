public import HeraldCore
import HeraldPushCore
import KasiaProtocol

/// Kasia's `kasia.handshake`, `kasia.contextual_message` and `kasia.payment`: a transaction's
/// fields, checked (a txid, Kaspa addresses, hex payloads), rendered by `KasiaTemplate` at the
/// app's privacy; an untargeted event routes by its recipient.
struct KasiaEventTemplate: EventTemplate {
    var names: [String] { KasiaEvent.Kind.allCases.map { "kasia." + $0.rawValue } }

    func render(_ event: TemplateEvent) throws -> TemplateRendering {
        let kasia = try Self.event(event)
        return TemplateRendering(push: event.app.render(kasia), kasia: kasia, appliedPresentationDefaults: true)
    }

    private struct Fields {
        var tx_id: String?
        var sender: String?
        var recipient: String?
        var alias: String?
        var payload: String?
        var timestamp: Int64?
        var daa_score: UInt64?
        var amount: UInt64?
    }

    private static func event(_ event: TemplateEvent) throws -> KasiaEvent {
        let prefix = event.prefix
        let f: Fields
        do throws(JSONFieldError) {
            let r = try JSONObjectReader(event.fields, at: prefix + "fields")
            f = Fields(
                tx_id: try r.string("tx_id"), sender: try r.string("sender"), recipient: try r.string("recipient"), alias: try r.string("alias"),
                payload: try r.string("payload"), timestamp: try r.integer("timestamp"), daa_score: try r.unsigned("daa_score"),
                amount: try r.unsigned("amount"))
        } catch {
            throw Refusal(error)
        }
        func isHex(_ s: String) -> Bool { s.utf8.count % 2 == 0 && s.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) } }
        guard let txID = f.tx_id else { throw Refusal.missing(prefix + "fields.tx_id") }
        guard txID.utf8.count == 64, isHex(txID) else { throw Refusal.invalid(prefix + "fields.tx_id", "tx_id is 64 lowercase hex characters") }
        guard let sender = f.sender else { throw Refusal.missing(prefix + "fields.sender") }
        guard (try? KaspaAddress(sender)) != nil else { throw Refusal.invalid(prefix + "fields.sender", "sender is not a Kaspa address") }
        if let recipient = f.recipient, (try? KaspaAddress(recipient)) == nil {
            throw Refusal.invalid(prefix + "fields.recipient", "recipient is not a Kaspa address")
        }
        if let payload = f.payload, !isHex(payload) {
            throw Refusal.invalid(prefix + "fields.payload", "payload is the lowercase hex of the transaction payload")
        }
        guard let timestamp = f.timestamp else { throw Refusal.missing(prefix + "fields.timestamp") }
        guard let daaScore = f.daa_score else { throw Refusal.missing(prefix + "fields.daa_score") }
        guard let kind = KasiaEvent.Kind(rawValue: String(event.name.dropFirst("kasia.".count))) else {
            throw Refusal.invalid(prefix + "template", "\(event.name) is not a Kasia template")
        }
        return KasiaEvent(
            kind: kind, txID: txID, sender: sender, recipient: f.recipient, alias: f.alias, payloadHex: f.payload,
            timestamp: timestamp, daaScore: daaScore, amount: f.amount)
    }
}

extension AppSettings {
    /// A Kasia event as this app's devices get it: at its privacy, with the app's presentation for
    /// the template, grouped by the sender (under `minimal`, by an opaque id of the sender made
    /// with the app's signing key).
    public func render(_ event: KasiaEvent) -> RenderedPush {
        let thread = privacy == .minimal ? sealing?.signingKey.opaqueThreadID(event.sender) : nil
        return KasiaTemplate.render(event, privacy: privacy, opaqueThread: thread, presentation: presentation.for("kasia." + event.kind.rawValue))
    }
}
