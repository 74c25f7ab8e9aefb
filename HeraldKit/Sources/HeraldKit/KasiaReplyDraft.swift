public import KasiaCrypto
public import KasiaProtocol

/// A quick reply to a Kasia conversation as the transaction payload it becomes: the text sealed to
/// the contact with the Kasia cipher, framed as a contextual message under the alias this device
/// writes the conversation with (`ciph_msg:1:comm:<alias>:<base64>`, the reference's
/// `payload_comm`). The app puts `payload` in a transaction its wallet signs; Kasia's
/// contextual messages pay the sender's own address (the contact reads them by sender and alias).
public struct KasiaReplyDraft: Hashable, Sendable {
    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// Nothing but white space to send.
        case empty
        /// Longer than `maximumTextBytes`.
        case tooLong
        /// The alias is not 12 lowercase hex characters (Kasia's alias form).
        case invalidAlias
        /// The contact's address is not one the cipher seals to.
        case cipher(KasiaCipherError)

        public var description: String {
            switch self {
            case .empty: "the reply is empty"
            case .tooLong: "the reply is longer than \(KasiaReplyDraft.maximumTextBytes) bytes"
            case .invalidAlias: "the alias is 12 lowercase hex characters"
            case .cipher(let error): "\(error)"
            }
        }
    }

    /// The longest reply, in UTF-8 bytes: its payload (sealed, base64, framed) stays well within
    /// what a Kaspa transaction carries and what fits a push inline.
    public static let maximumTextBytes = 2_000

    /// Whom it is sealed to: the conversation's contact.
    public let recipient: KaspaAddress
    /// The alias this device writes the conversation with.
    public let alias: String
    /// The transaction payload's bytes.
    public let payload: [UInt8]

    /// The payload in hex, as wallets' RPCs take it.
    public var payloadHex: String { Hex.encode(payload) }

    /// Seals `text` to `contact` and frames it under `alias`.
    public init(replying text: String, to contact: KaspaAddress, alias: String, cipher: KasiaCipher) throws(Failure) {
        guard text.contains(where: { !$0.isWhitespace }) else { throw .empty }
        guard text.utf8.count <= Self.maximumTextBytes else { throw .tooLong }
        guard alias.utf8.count == 12, alias.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { throw .invalidAlias }
        let sealed: [UInt8]
        do { sealed = try cipher.encrypt(text, to: contact) } catch { throw .cipher(error) }
        recipient = contact
        self.alias = alias
        payload = KasiaPayload.contextualMessagePayload(alias: alias, sealed: sealed)
    }
}
