public import HeraldCore
import KasiaProtocol

/// Turns a transaction into the Kasia event Herald pushes.
///
/// Handshakes (`1:handshake:` and legacy `ciph_msg:` + sealed), contextual messages and
/// payments (`1:payment:`, KaChat's `1:pay:`) become events; self-stash and broadcast are
/// ignored. The sender is the address of the coin input 0 spends; the recipient is the first
/// output not paid to the sender, and the amount is that output's value. When that coin is known
/// (the node gave it, or a remembered Kasia transaction made it), the event carries the sender's
/// proof for the phone (`KaspaTransactionProof`).
public struct KasiaClassifier: Sendable {
    /// What a transaction is, for Herald.
    public enum Classification: Hashable, Sendable {
        /// No `ciph_msg:` payload, or one that does not parse.
        case notKasia
        /// A Kasia operation Herald does not push (self-stash, broadcast).
        case ignored(String)
        /// Kasia, but the sender is unknown here: ask the node (`getUtxoReturnAddress`).
        case needsSender(RpcOutpoint)
        case event(KasiaEvent)
    }

    public init() {}

    /// Classifies `transaction`.
    /// - Parameters:
    ///   - sender: the sender, when already resolved (after `getUtxoReturnAddress`).
    ///   - spentOutput: the output an outpoint names, when known (an outpoint map the source keeps).
    ///   - timestamp: unix seconds of the event (the block's time).
    ///   - daaScore: the accepting block's DAA score.
    public func classify(
        _ transaction: RpcTransaction, timestamp: Int64, daaScore: UInt64, sender resolved: String? = nil,
        spentOutput: (RpcOutpoint) -> RpcUtxoEntry? = { _ in nil }
    ) -> Classification {
        guard transaction.isKasia, let txID = transaction.id,
            let payload = KasiaPayload(hex: transaction.payload)
        else { return .notKasia }
        let kind: KasiaEvent.Kind
        var alias: String?
        switch payload {
        case .handshake, .legacy: kind = .handshake
        case .payment: kind = .payment
        case .contextualMessage(let a, _):
            kind = .contextualMessage
            alias = a
        case .selfStash: return .ignored("self_stash")
        case .broadcast: return .ignored("broadcast")
        }
        guard let first = transaction.inputs.first else { return .notKasia }
        // The sender owns the coin input 0 spends, nothing else: an output pays whoever the
        // signer chose, so taking the sender from one would let anyone speak as anyone.
        let spent = first.utxoEntry ?? spentOutput(first.previousOutpoint)
        let sender: String
        if let resolved {
            sender = resolved
        } else if let known = spent?.address {
            sender = known
        } else {
            return .needsSender(first.previousOutpoint)
        }
        let paid = transaction.outputs.first { $0.address != nil && $0.address != sender }
        return .event(KasiaEvent(
            kind: kind, txID: txID, sender: sender, recipient: paid?.address, alias: alias,
            payloadHex: transaction.payload, timestamp: timestamp, daaScore: daaScore,
            amount: kind == .payment ? paid?.value : nil, proof: spent.flatMap { transaction.senderProof(spending: $0) }))
    }
}
