/// The three Kasia operations Herald pushes, as a push's `kasia.type` names them.
public enum KasiaMessageKind: String, Hashable, Sendable, CaseIterable {
    case handshake
    case contextualMessage = "contextual_message"
    case payment

    /// The notification category Herald gives the kind's pushes and HeraldKit's Kasia set
    /// describes (`kasia.message`: reply, mark as read; `kasia.handshake`: accept, decline;
    /// `kasia.payment`: open).
    public var notificationCategory: String {
        switch self {
        case .handshake: "kasia.handshake"
        case .contextualMessage: "kasia.message"
        case .payment: "kasia.payment"
        }
    }
}

/// A Kasia operation read from a transaction's payload.
///
/// Dispatch is byte-wise after `ciph_msg:`, as the Kasia indexer does, plus KaChat's `1:pay:`.
public enum KasiaPayload: Hashable, Sendable {
    /// `ciph_msg:1:handshake:` ‖ sealed, encrypted to the recipient.
    case handshake(sealed: [UInt8])
    /// `ciph_msg:` ‖ sealed without a version (Kasia before August 2025); a handshake or message.
    case legacy(sealed: [UInt8])
    /// `ciph_msg:1:comm:<alias>:<body>`; the body is base64 (current) or hex (older) of the box.
    case contextualMessage(alias: String, body: [UInt8])
    /// `ciph_msg:1:payment:` (Kasia) or `ciph_msg:1:pay:` (KaChat) ‖ sealed.
    case payment(sealed: [UInt8], variant: PaymentVariant)
    /// `ciph_msg:1:self_stash:[scope:]` ‖ sealed, encrypted to the sender itself.
    case selfStash(scope: String?, sealed: [UInt8])
    /// `ciph_msg:1:bcast:<channel>:<text>`, not encrypted.
    case broadcast(channel: String, text: String)

    /// How a payment was framed.
    public enum PaymentVariant: String, Hashable, Sendable {
        case payment, pay
    }

    /// `ciph_msg:` in ASCII: every Kasia payload starts with it.
    public static let prefix: [UInt8] = Array("ciph_msg:".utf8)

    /// Parses a transaction payload; `nil` when it is not a Kasia operation.
    public init?(_ bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        guard bytes.starts(with: Self.prefix), bytes.count > Self.prefix.count else { return nil }
        let rest = bytes[Self.prefix.count...]
        guard rest.starts(with: Self.versionOne) else {
            self = .legacy(sealed: Array(rest))
            return
        }
        let op = rest.dropFirst(Self.versionOne.count)
        func after(_ tag: String) -> ArraySlice<UInt8>? {
            let tag = Array(tag.utf8)
            return op.starts(with: tag) ? op.dropFirst(tag.count) : nil
        }
        if let sealed = after("payment:") {
            self = .payment(sealed: Array(sealed), variant: .payment)
        } else if let sealed = after("pay:") {
            self = .payment(sealed: Array(sealed), variant: .pay)
        } else if let sealed = after("handshake:") {
            self = .handshake(sealed: Array(sealed))
        } else if let field = after("comm:") {
            guard let colon = field.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            self = .contextualMessage(alias: String(decoding: field[..<colon], as: UTF8.self), body: Array(field[(colon + 1)...]))
        } else if let field = after("self_stash:") {
            if let colon = field.firstIndex(of: UInt8(ascii: ":")) {
                self = .selfStash(scope: String(decoding: field[..<colon], as: UTF8.self), sealed: Array(field[(colon + 1)...]))
            } else {
                self = .selfStash(scope: nil, sealed: Array(field))
            }
        } else if let field = after("bcast:") {
            let colon = field.firstIndex(of: UInt8(ascii: ":")) ?? field.endIndex
            let text = colon < field.endIndex ? field[(colon + 1)...] : []
            self = .broadcast(channel: String(decoding: field[..<colon], as: UTF8.self), text: String(decoding: text, as: UTF8.self))
        } else {
            return nil
        }
    }

    /// Parses the hex form of a payload (as RPC JSON and pushes carry it).
    public init?(hex: some StringProtocol) {
        guard let bytes = Hex.decode(hex) else { return nil }
        self.init(bytes)
    }

    static let versionOne: [UInt8] = Array("1:".utf8)

    /// The sealed box this operation carries, if any; a `comm` body is base64- or hex-decoded.
    public var sealed: [UInt8]? {
        switch self {
        case .handshake(let sealed), .legacy(let sealed), .payment(let sealed, _), .selfStash(_, let sealed): sealed
        case .contextualMessage(_, let body): Self.commBodyToSealed(body)
        case .broadcast: nil
        }
    }

    /// Current Kasia writes base64, Kasia up to August 2025 wrote hex. An all-hex string is also
    /// valid base64, so base64 wins only when it decodes to a plausible box (≥ 61 bytes, a
    /// compressed key at offset 12), as in the reference's `comm_body_to_sealed`.
    public static func commBodyToSealed(_ body: [UInt8]) -> [UInt8]? {
        if let raw = Base64.decode(body), raw.count >= KasiaSealedBox.minimumLength, raw[12] == 2 || raw[12] == 3 {
            return raw
        }
        return Hex.decode(String(decoding: body, as: UTF8.self))
    }

    /// Builders for the on-chain bytes (the reference's `payload_*`).
    public static func handshakePayload(sealed: [UInt8]) -> [UInt8] { prefix + Array("1:handshake:".utf8) + sealed }
    public static func paymentPayload(sealed: [UInt8], variant: PaymentVariant = .payment) -> [UInt8] {
        prefix + Array("1:\(variant.rawValue):".utf8) + sealed
    }
    public static func contextualMessagePayload(alias: String, sealed: [UInt8]) -> [UInt8] {
        prefix + Array("1:comm:\(alias):".utf8) + Array(Base64.encode(sealed).utf8)
    }
    public static func selfStashPayload(scope: String?, sealed: [UInt8]) -> [UInt8] {
        prefix + Array("1:self_stash:".utf8) + Array((scope.map { $0 + ":" } ?? "").utf8) + sealed
    }
}

/// The cipher's output layout: nonce(12) ‖ ephemeral public key(33) ‖ ciphertext ‖ tag(16)
/// Layout only: no cryptography here.
public struct KasiaSealedBox: Hashable, Sendable {
    public static let nonceLength = 12
    public static let ephemeralKeyLength = 33
    public static let tagLength = 16
    /// An empty message: nonce, key and tag.
    public static let minimumLength = nonceLength + ephemeralKeyLength + tagLength

    public let nonce: [UInt8]
    /// SEC1 compressed (`02`/`03` ‖ x).
    public let ephemeralPublicKey: [UInt8]
    public let ciphertext: [UInt8]
    public let tag: [UInt8]

    /// Splits a box; `nil` when it is too short or the key is not a compressed point's encoding.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= Self.minimumLength, bytes[12] == 2 || bytes[12] == 3 else { return nil }
        nonce = Array(bytes[0..<12])
        ephemeralPublicKey = Array(bytes[12..<45])
        ciphertext = Array(bytes[45..<(bytes.count - Self.tagLength)])
        tag = Array(bytes.suffix(Self.tagLength))
    }

    public init(nonce: [UInt8], ephemeralPublicKey: [UInt8], ciphertext: [UInt8], tag: [UInt8]) {
        self.nonce = nonce
        self.ephemeralPublicKey = ephemeralPublicKey
        self.ciphertext = ciphertext
        self.tag = tag
    }

    /// The wire bytes.
    public var bytes: [UInt8] { nonce + ephemeralPublicKey + ciphertext + tag }
}
