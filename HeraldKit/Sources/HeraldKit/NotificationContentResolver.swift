import Foundation
import KasiaCrypto
import KasiaProtocol

/// A contact as the app shares it with its extension.
public struct Contact: Codable, Hashable, Sendable {
    public var address: String
    /// The name the user gave the contact.
    public var name: String
    /// The aliases of the contact's conversations (the device's contextual routes for this peer):
    /// a message from an app with `privacy: minimal` names no sender, only its alias.
    public var aliases: [String]
    /// The contact's picture: the path of an image file in the App Group, which a communication
    /// notification shows beside their message.
    public var avatar: String?

    public init(address: String, name: String, aliases: [String] = [], avatar: String? = nil) {
        self.address = address
        self.name = name
        self.aliases = aliases
        self.avatar = avatar
    }

    private enum CodingKeys: String, CodingKey { case address, name, aliases, avatar }

    /// Contacts stored before aliases or avatars were kept decode with none.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        address = try c.decode(String.self, forKey: .address)
        name = try c.decode(String.self, forKey: .name)
        aliases = try c.decodeIfPresent([String].self, forKey: .aliases) ?? []
        avatar = try c.decodeIfPresent(String.self, forKey: .avatar)
    }
}

/// What the extension shows, and what it leaves for the app.
public struct NotificationOutcome: Hashable, Sendable {
    public var title: String
    public var body: String
    /// What to write to the shared store, if anything.
    public var record: SharedRecord?
    /// The Kasia sender named was proven on this phone by the sender's own signature
    /// (`KaspaTransactionProof`); false when the push carried no proof that could be checked,
    /// and the sender is the gateway's word.
    public var senderProven = false
    /// Thread, category, sound, interruption level, relevance and badge, as the push gave them
    /// (`HeraldNotificationService` fills it; a push that failed its checks keeps no thread).
    public var presentation = NotificationPresentation()
    /// Dismissals the verified document carried (an alert's ride-along `herald_dismiss`, or a
    /// `herald.dismiss` document's own): what `DismissalPlanner` takes off the screen now.
    public var dismissals: [Dismissal] = []
}

/// What the extension leaves in the shared store for the app.
public enum SharedRecord: Hashable, Sendable {
    /// A message the extension opened: kept until the app consumes it.
    case message(StoredMessage)
    /// A transaction the app must fetch and open itself (no inline payload, or it did not open).
    case pendingFetch(PendingFetch)
}

/// A decrypted Kasia message, kept only until the app consumes it.
public struct StoredMessage: Codable, Hashable, Sendable {
    public var txID: String
    public var sender: String
    public var kind: String
    /// The decrypted text (for files, the file's JSON).
    public var plaintext: String
    /// Unix seconds.
    public var timestamp: Int64
    public init(txID: String, sender: String, kind: String, plaintext: String, timestamp: Int64) {
        self.txID = txID
        self.sender = sender
        self.kind = kind
        self.plaintext = plaintext
        self.timestamp = timestamp
    }
}

/// A transaction the app fetches by id.
public struct PendingFetch: Codable, Hashable, Sendable {
    public var txID: String
    public var sender: String
    public var kind: String
    /// Unix seconds.
    public var timestamp: Int64
    /// The push's sender proof, without the payload it did not carry: once the app has fetched
    /// the transaction, it puts the payload in and verifies the sender as the extension would
    /// have (`KaspaTransactionProof.verify(sender:verifier:)`).
    public var proof: KaspaTransactionProof?
    public init(txID: String, sender: String, kind: String, timestamp: Int64, proof: KaspaTransactionProof? = nil) {
        self.txID = txID
        self.sender = sender
        self.kind = kind
        self.timestamp = timestamp
        self.proof = proof
    }
}

/// The Notification Service Extension's logic as a pure function: push + contacts + key →
/// title, body and what to store.
public struct NotificationContentResolver: Sendable {
    public let cipher: KasiaCipher
    /// Checks Kasia sender proofs (BIP340 Schnorr).
    public let verifier: any SchnorrVerifier

    /// Why a resolver cannot be made.
    public enum SetupError: Error, Hashable, Sendable, CustomStringConvertible {
        /// No BIP340 verifier: neither given nor the cipher's curve. A resolver without one could
        /// only show senders it never checked, so none is made.
        case noSchnorrVerifier

        public var description: String {
            "NotificationContentResolver needs a SchnorrVerifier to check Kasia sender proofs: pass verifier:, or a curve that conforms to SchnorrVerifier (the DocC adapter's P256KCurve does)"
        }
    }

    /// - Parameters:
    ///   - cipher: opens Kasia messages.
    ///   - verifier: checks Kasia sender proofs; nil takes the cipher's curve (`LibSecp256k1`,
    ///     or an app's curve that conforms to `SchnorrVerifier`).
    /// - Throws: `SetupError.noSchnorrVerifier` when there is none: an extension that cannot
    ///   check senders fails at setup, never shows unproven senders as if checked.
    public init(cipher: KasiaCipher, verifier: (any SchnorrVerifier)? = nil) throws(SetupError) {
        guard let verifier = verifier ?? (cipher.curve as? any SchnorrVerifier) else { throw .noSchnorrVerifier }
        self.cipher = cipher
        self.verifier = verifier
    }

    /// What a Kasia push's sender proof says of its sender.
    public enum SenderCheck: Hashable, Sendable {
        /// The transaction was signed by this address's key, over this very transaction.
        case proven(String)
        /// No proof, no payload to check it with, or no verifier: the sender is the gateway's word.
        case unchecked
        /// The proof does not hold for the sender named.
        case failed(KaspaTransactionProof.Failure)
    }

    /// Checks `push`'s sender proof against the sender it names (without one, the address the
    /// proof's spent coin pays, on the network of `contacts`' addresses, else mainnet), and that
    /// what the push shows is what the proven transaction says: its id is the push's `txId`, its
    /// payload the push's kind, and — with the wallet's `privateKey` — a handshake or payment pays
    /// the device's own address (a payment the amount the push names), and a message's alias is
    /// one of the sender's conversations with the device (when `contacts` lists its aliases).
    public func checkSender(of push: KasiaPush, contacts: [Contact] = [], privateKey: KasiaPrivateKey? = nil) -> SenderCheck {
        guard var proof = push.proof else { return .unchecked }
        if proof.payload.bytes.isEmpty {
            guard let payload = push.payloadHex.flatMap({ Hex.decode($0) }) else { return .unchecked }
            proof.payload = HexBytes(payload)
        }
        let claimed: KaspaAddress
        if let sender = push.sender {
            guard let address = try? KaspaAddress(sender) else { return .failed(.notASchnorrAddress) }
            claimed = address
        } else {
            let prefix = contacts.lazy.compactMap { try? KaspaAddress($0.address) }.first?.prefix ?? .mainnet
            guard let address = proof.spentAddress(prefix: prefix) else { return .failed(.notASchnorrAddress) }
            claimed = address
        }
        do {
            try proof.verify(sender: claimed, verifier: verifier)
        } catch {
            return .failed(error)
        }
        if let failure = Self.binding(of: proof, to: push, sender: claimed, contacts: contacts, ownAddress: privateKey.flatMap {
            try? cipher.address(of: $0, prefix: claimed.prefix)
        }) {
            return .failed(failure)
        }
        return .proven(claimed.string)
    }

    /// Why the proven transaction is not what the push shows, or nil when it is.
    static func binding(
        of proof: KaspaTransactionProof, to push: KasiaPush, sender: KaspaAddress, contacts: [Contact], ownAddress: KaspaAddress?
    ) -> KaspaTransactionProof.Failure? {
        guard Hex.encode(proof.transactionID()) == push.txID.lowercased() else { return .otherTransaction }
        let payload = KasiaPayload(proof.payload.bytes)
        switch (push.kind, payload) {
        case (.handshake, .handshake?), (.handshake, .legacy?), (.payment, .payment?), (.contextualMessage, .contextualMessage?): break
        default: return .otherKind
        }
        switch push.kind {
        case .handshake, .payment:
            guard let own = ownAddress else { return nil }
            // The sender's change is not a payment to the device: the device must not be the sender.
            guard own != sender, let paid = proof.paid(to: own) else { return .notToThisDevice }
            if push.kind == .payment, let amount = push.amount, amount != paid { return .otherAmount }
        case .contextualMessage:
            guard case .contextualMessage(let alias, _)? = payload, let contact = contacts.first(where: { $0.address == sender.string }),
                !contact.aliases.isEmpty
            else { return nil }
            if !contact.aliases.contains(alias) { return .notToThisDevice }
        }
        return nil
    }

    /// Resolves a push. Non-Kasia pushes keep their alert and store nothing: their content is
    /// fetched by the app (SafeWhisper, GhostTalk) or is already in the alert (Claudiator).
    public func resolve(_ push: HeraldPush, contacts: [Contact], privateKey: KasiaPrivateKey?) -> NotificationOutcome {
        switch push {
        case .kasia(let kasia):
            return resolve(kasia, contacts: contacts, privateKey: privateKey)
        case .session(let p): return NotificationOutcome(title: p.alert?.title ?? "", body: p.alert?.body ?? "", record: nil)
        case .agentEvent(let p): return NotificationOutcome(title: p.alert?.title ?? "", body: p.alert?.body ?? "", record: nil)
        case .other(let push): return NotificationOutcome(title: push.alert?.title ?? "", body: push.alert?.body ?? "", record: nil)
        case .conversation: return NotificationOutcome(title: "", body: "", record: nil)
        }
    }

    /// The extension's path for a push it authenticated first (`PushAuthenticator`): a verified
    /// document is resolved as its push; anything else shows `genericText` alone, stores nothing,
    /// and gives the reason for the reliability tracker. A push that failed is never shown as a
    /// contact's message.
    public func resolve(
        verified document: Result<[UInt8], PushRejection>, contacts: [Contact], privateKey: KasiaPrivateKey?, genericText: String = "New message"
    ) -> (outcome: NotificationOutcome, rejection: PushRejection?) {
        let generic = NotificationOutcome(title: "", body: genericText, record: nil)
        switch document {
        case .failure(let rejection): return (generic, rejection)
        case .success(let bytes):
            guard let push = try? HeraldPush(json: Data(bytes)) else { return (generic, .malformed) }
            // Signed by Herald, but a Kasia sender the transaction does not prove is not shown.
            if case .kasia(let kasia) = push, case .failed = checkSender(of: kasia, contacts: contacts, privateKey: privateKey) {
                return (generic, .senderNotProven)
            }
            return (resolve(push, contacts: contacts, privateKey: privateKey), nil)
        }
    }

    /// Resolves a Kasia push: the contact's name (or the short address), the decrypted text
    /// when the inline payload opens with `privateKey`, else a pending-fetch entry. A push without
    /// a sender (`privacy: minimal`) is matched to a contact by its message's alias; failing that,
    /// the record's sender is empty and the app learns it from the fetched transaction. A push
    /// with a sender proof names the sender only when the proof holds (`checkSender`); one whose
    /// proof fails names nobody.
    public func resolve(_ push: KasiaPush, contacts: [Contact], privateKey: KasiaPrivateKey?) -> NotificationOutcome {
        let check = checkSender(of: push, contacts: contacts, privateKey: privateKey)
        let claimed: String? =
            switch check {
            case .proven(let address): address
            case .unchecked: push.sender
            case .failed: nil
            }
        let contact: Contact? =
            if case .failed = check { nil }
            else if let claimed { contacts.first { $0.address == claimed } }
            else { Self.contact(byAliasOf: push, in: contacts) }
        let sender = claimed ?? contact?.address
        let name = contact?.name ?? sender.map(KasiaText.shortAddress) ?? "Someone"
        let plaintext = open(push, privateKey: privateKey)
        let record: SharedRecord =
            if let plaintext {
                .message(StoredMessage(txID: push.txID, sender: sender ?? "", kind: push.kind.rawValue, plaintext: plaintext, timestamp: push.timestamp))
            } else {
                .pendingFetch(PendingFetch(txID: push.txID, sender: sender ?? "", kind: push.kind.rawValue, timestamp: push.timestamp, proof: push.proof))
            }
        var outcome: NotificationOutcome
        switch push.kind {
        case .handshake:
            outcome = NotificationOutcome(title: "New Contact Request", body: "From \(name)", record: record)
        case .payment:
            let body = push.amount.map { "\(KasiaText.kas(sompi: $0)) KAS from \(name)" } ?? "Payment from \(name)"
            outcome = NotificationOutcome(title: "Payment Received", body: body, record: record)
        case .contextualMessage:
            outcome = NotificationOutcome(title: name, body: plaintext.map(Self.messageBody) ?? "New message", record: record)
        }
        if case .proven = check { outcome.senderProven = true }
        // Grouped by conversation (the contact's address, whatever thread id the push carried),
        // with the kind's category and a ring when the push says neither.
        outcome.presentation.category = NotificationCategory.kasia(push.kind).identifier
        outcome.presentation.sound = "default"
        if let sender {
            outcome.presentation.conversation = NotificationConversation(id: sender)
            outcome.presentation.threadIdentifier = sender
            outcome.presentation.sender = NotificationPerson(handle: sender, displayName: name, avatar: contact?.avatar)
            outcome.presentation.summaryArgument = name
        }
        return outcome
    }

    /// The contact whose conversation uses the alias of the push's inline message.
    static func contact(byAliasOf push: KasiaPush, in contacts: [Contact]) -> Contact? {
        guard let hex = push.payloadHex, case .contextualMessage(let alias, _)? = KasiaPayload(hex: hex) else { return nil }
        return contacts.first { $0.aliases.contains(alias) }
    }

    /// The inline payload's plaintext, if it is the operation the push says and opens with the key.
    func open(_ push: KasiaPush, privateKey: KasiaPrivateKey?) -> String? {
        guard let privateKey, let hex = push.payloadHex, let payload = KasiaPayload(hex: hex) else { return nil }
        switch (push.kind, payload) {
        case (.handshake, .handshake), (.handshake, .legacy), (.payment, .payment), (.contextualMessage, .contextualMessage):
            guard let sealed = payload.sealed else { return nil }
            return try? cipher.decrypt(sealed, with: privateKey)
        default:
            return nil
        }
    }

    /// A message's body line: the text, "Voice message" for audio, the file name for files.
    static func messageBody(_ plaintext: String) -> String {
        if plaintext.hasPrefix("aud:") { return "Voice message" }
        guard plaintext.hasPrefix("{"), let object = try? JSONSerialization.jsonObject(with: Data(plaintext.utf8)) as? [String: Any],
            object["type"] as? String == "file"
        else { return plaintext }
        if let mime = object["mimeType"] as? String, mime.lowercased().hasPrefix("audio/") { return "Voice message" }
        return object["name"] as? String ?? "File"
    }
}
