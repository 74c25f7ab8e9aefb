public import Crypto
public import Foundation
import HeraldAPNsCore
public import HeraldCore
public import HeraldPushCore
public import HeraldStore
public import PushSigning
import Synchronization
import WebPushCrypto

#if canImport(Glibc)
// `timespec` as Foundation's CoreFoundation declares it on Linux (its fields need the import).
import CoreFoundation
import Glibc
#endif

/// Whether an app seals its pushes to its devices' `push_keys` (docs/signed-pushes.md).
public enum SealingMode: String, Sendable, CaseIterable {
    /// Every iOS and Android registration must bring `push_keys`; every push to them is sealed.
    case required
    /// A device that registered `push_keys` gets sealed pushes; one without gets them in clear.
    case whenRegistered = "when-registered"
    /// Nothing is sealed (pushes are still signed).
    case off
}

/// An app's Ed25519 key for signed pushes, kept as PKCS#8 PEM (`openssl pkey` reads it).
public struct PushSigningKey: Sendable {
    public let privateKey: Curve25519.Signing.PrivateKey
    /// Turns a sealed push's collapse id into an opaque one (`opaqueCollapseID`): derived from the
    /// signing key, so every instance with the key makes the same ids and no other secret is kept.
    private let collapseKey: SymmetricKey
    /// Turns a conversation into the thread id a `privacy: minimal` push groups by (`opaqueThreadID`).
    private let threadKey: SymmetricKey

    /// A fresh key.
    public init() { self.init(privateKey: Curve25519.Signing.PrivateKey()) }

    public init(privateKey: Curve25519.Signing.PrivateKey) {
        self.privateKey = privateKey
        collapseKey = Self.derivedKey(privateKey, "herald collapse id")
        threadKey = Self.derivedKey(privateKey, "herald thread id")
    }

    private static func derivedKey(_ key: Curve25519.Signing.PrivateKey, _ purpose: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: key.rawRepresentation), info: Array(purpose.utf8), outputByteCount: 32)
    }

    /// The thread id of a conversation whose name the push services must not read (a Kasia
    /// contact's address under `privacy: minimal`): 24 bytes of HMAC-SHA256, base64url. Stable for
    /// every push of the conversation, so the phone still groups them; the app's own (HeraldKit
    /// resolves the sender from the payload) replaces it in the extension.
    public func opaqueThreadID(_ conversation: String) -> String {
        Self.opaque(conversation, with: threadKey)
    }

    private static func opaque(_ id: String, with key: SymmetricKey) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array(id.utf8), using: key)
        return Base64URLText.encode(Array(Array(mac).prefix(24)))
    }

    /// What Apple, Google and a Web Push service see as a sealed push's collapse id (`apns-collapse-id`,
    /// `collapse_key`, `Topic`): 24 bytes of HMAC-SHA256 of the id, base64url (32 characters, a
    /// Topic's limit). Pushes with one id still replace each other; the id itself (a txid, a
    /// conversation) stays inside the seal.
    public func opaqueCollapseID(_ id: String) -> String {
        Self.opaque(id, with: collapseKey)
    }

    /// RFC 8410's PKCS#8 form of an Ed25519 private key is this prefix and the 32-byte seed.
    private static let pkcs8Prefix: [UInt8] = [0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]

    /// Reads a `-----BEGIN PRIVATE KEY-----` PEM holding an Ed25519 key (`herald signing-key`, or
    /// `openssl genpkey -algorithm ed25519`); nil for anything else.
    public init?(pem: String) {
        let lines = pem.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        guard let begin = lines.firstIndex(of: "-----BEGIN PRIVATE KEY-----"), let end = lines.firstIndex(of: "-----END PRIVATE KEY-----"),
            begin < end, let der = Data(base64Encoded: lines[(begin + 1)..<end].joined()).map(Array.init),
            der.count == 48, Array(der.prefix(16)) == Self.pkcs8Prefix,
            let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: der.suffix(32))
        else { return nil }
        self.init(privateKey: key)
    }

    public var pem: String {
        let body = Data(Self.pkcs8Prefix + Array(privateKey.rawRepresentation)).base64EncodedString()
        return "-----BEGIN PRIVATE KEY-----\n\(body)\n-----END PRIVATE KEY-----\n"
    }

    /// The public key as registrations and `GET /v1/push/signing-key` give it: its 32 raw bytes, base64url.
    public var publicKeyBase64URL: String { Base64URLText.encode(Array(privateKey.publicKey.rawRepresentation)) }
}

/// A device's keys for sealed pushes, as it registered them (`push_keys`), kept in its attributes.
public struct DevicePushKeys: Sendable {
    /// The 65-byte uncompressed P-256 point.
    public let p256dh: [UInt8]
    public let auth: [UInt8]
    let publicKey: P256.KeyAgreement.PublicKey

    static let p256dhAttribute = "push_p256dh"
    static let authAttribute = "push_auth"

    /// - Throws: a `Refusal` naming `push_keys.p256dh` or `push_keys.auth`.
    public init(p256dh: String?, auth: String?) throws {
        guard let p256dh else { throw Refusal.missing("push_keys.p256dh") }
        guard let auth else { throw Refusal.missing("push_keys.auth") }
        guard let point = Base64URLText.decode(p256dh), point.count == 65, point[0] == 0x04,
            let key = try? P256.KeyAgreement.PublicKey(x963Representation: point)
        else { throw Refusal.unprocessable("push_keys.p256dh", "push_keys.p256dh is a P-256 public key: 65 bytes, uncompressed, base64url") }
        guard let secret = Base64URLText.decode(auth), secret.count == 16 else {
            throw Refusal.unprocessable("push_keys.auth", "push_keys.auth is 16 bytes, base64url")
        }
        self.p256dh = point
        self.auth = secret
        publicKey = key
    }

    /// The keys a device's attributes hold, if it registered some.
    public init?(_ attributes: DeviceAttributes) {
        guard let point = attributes[Self.p256dhAttribute], let secret = attributes[Self.authAttribute],
            let keys = try? DevicePushKeys(p256dh: point, auth: secret)
        else { return nil }
        self = keys
    }

    /// `attributes` with these keys.
    public func stored(in attributes: DeviceAttributes) -> DeviceAttributes {
        attributes.setting(Self.p256dhAttribute, to: Base64URLText.encode(p256dh)).setting(Self.authAttribute, to: Base64URLText.encode(auth))
    }
}

/// What a sealed alert shows before the app's extension opens it (and when it fails): a key of
/// the app's `Localizable.strings` (`loc-key`) and the text in clear (`body`) for a reader without
/// them. Apple takes the key when the app has it and shows the key itself when not, so the key is
/// the text unless the operator names one.
public struct SealedAlert: Sendable, Hashable {
    public let text: String
    public let key: String
    /// `"alert":` 's object, as the sealed payload writes it.
    let encoded: [UInt8]

    public init(text: String, key: String? = nil) {
        self.text = text
        self.key = key ?? text
        encoded = JSONValue.object([.init("loc-key", .string(self.key)), .init("body", .string(text))]).encoded
    }
}

extension SealedAlert: ExpressibleByStringLiteral {
    public init(stringLiteral text: String) { self.init(text: text) }
}

/// What an app's pushes become on their way out: signed always, sealed to devices that gave keys.
public struct PushSealing: Sendable {
    public var mode = SealingMode.whenRegistered
    /// What a sealed alert shows before the app's extension opens it.
    public var genericAlert: SealedAlert = "New message"
    /// A template's sealed alert, where it is not `genericAlert` (`kasia.payment`: "New payment").
    public var templateAlerts: [String: SealedAlert] = [:]
    /// The app's signing key.
    public var signingKey: PushSigningKey
    /// The key was made at start, not read from a file: phones that pinned it refuse the pushes
    /// of the next start.
    public var keyIsEphemeral = false
    /// Each device's sealing key, shared by the app's registrations and its pushes on every service.
    public var sessions = SealingSessions()
    /// What signing and sealing the app's pushes has cost, over every service.
    public var cost = SealingCost()

    public init(signingKey: PushSigningKey, mode: SealingMode = .whenRegistered, genericAlert: SealedAlert = "New message") {
        self.signingKey = signingKey
        self.mode = mode
        self.genericAlert = genericAlert
    }

    /// The member of a sealed APNs payload (and the only key of a sealed FCM data message)
    /// holding the ciphertext, base64url.
    public static let sealedMember = "herald_sealed"

    /// The push `device` gets for `push`, signed at `issuedAt` and sealed when the device has keys
    /// and the app seals; shrunk (Kasia's inline payload first) until it fits `limit` bytes.
    /// - Parameter template: the event's template, for its generic alert.
    /// - Parameter signatures: signatures already made for documents of this batch.
    /// - Parameter now: the sealing key's age is read against it (`sessions`).
    /// - Parameter opaqueCollapseID: the collapse id goes opaque even unsealed (Web Push: the body
    ///   is encrypted to the browser, and its push service sees only the `Topic`).
    public func prepare(
        _ push: RenderedPush, for device: DeviceAttributes, template: String? = nil, issuedAt: Int64, limit: Int,
        signatures: inout SignedDocuments, now: Date = Date(), opaqueCollapseID: Bool = false, rideAlong: [PendingDismissal] = []
    ) -> RenderedPush {
        // Most devices have no keys: a read of their attributes' bytes, not a parse.
        let session = seals(device) ? sessions.session(for: device, now: now) : nil
        // A Kasia sender proof names the sender: it travels sealed or not at all.
        var base = session == nil ? signatures.withoutProof(push) : push
        // Dismissals ride along inside a sealed alert only; they give way before the alert does.
        var riding = session != nil && push.pushType == .alert ? rideAlong : []
        // What a push too large gives up next: half its ride-along, then the document's own
        // (Kasia's inline payload); false when nothing is left to give.
        func giveWay() -> Bool {
            if !riding.isEmpty {
                riding.removeLast(max(1, riding.count / 2))
                return true
            }
            guard let smaller = base.shrunk() else { return false }
            base = smaller
            return true
        }
        while true {
            var document = base
            if !riding.isEmpty { document.payload = Self.adding(riding, to: base.payload) }
            let signed: SignedPush
            if let known = signatures[document.payload] {
                signed = known
            } else {
                signed = SignedPush(signing: document.payload, issuedAt: issuedAt, with: signingKey.privateKey)
                signatures[document.payload] = signed
            }
            var out = document
            // Nothing outside the seal names what is inside: the collapse id becomes opaque.
            if session != nil || opaqueCollapseID, let id = document.collapseID {
                out.collapseID = signatures.opaqueCollapseID(id, with: signingKey)
            }
            if let session {
                // A device with keys never gets its push in clear: what cannot be sealed whole
                // shrinks, and what cannot shrink goes as the generic alert alone.
                guard let sealed = try? session.encrypt(signed.envelope) else {
                    if giveWay() { continue }
                    out.payload = sealedPayload(
                        nil, pushType: document.pushType.rawValue, template: template, presentation: signatures.presentation(of: document))
                    out.fcmData = [:]
                    return out
                }
                let text = Base64URLText.encodedBytes(sealed)
                out.payload = sealedPayload(
                    text, pushType: document.pushType.rawValue, template: template, presentation: signatures.presentation(of: document))
                out.fcmData = [Self.sealedMember: String(decoding: text, as: UTF8.self)]
            } else if let attached = signed.attached {
                // A `custom` event's own FCM data map stays verbatim: FCM's data cannot carry the
                // document's bytes, so an unsealed Android push is not checkable either way.
                out.payload = attached
            }
            guard out.payload.count > limit, giveWay() else { return out }
        }
    }

    /// The member of a sealed alert's document listing the device's recent dismissals.
    public static let rideAlongMember = "herald_dismiss"

    /// `document` (a JSON object) with `herald_dismiss: [{"conversation", "up_to"}, …]` added last.
    static func adding(_ dismissals: [PendingDismissal], to document: [UInt8]) -> [UInt8] {
        guard document.last == UInt8(ascii: "}") else { return document }
        let list = JSONValue.array(dismissals.map {
            .object([.init("conversation", .string($0.conversation)), .init("up_to", .string($0.upTo))])
        })
        var out = Array(document.dropLast())
        let empty = out.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "{") || $0 == UInt8(ascii: "\n") }.isEmpty
        if !empty { out.append(UInt8(ascii: ",")) }
        out += Array("\"\(rideAlongMember)\":".utf8)
        out += list.encoded
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Makes a registered device's sealing key now, so that its pushes do not pay for it (the
    /// registration does); nothing when the app does not seal or the device gave no keys.
    public func registered(_ device: DeviceAttributes, now: Date) {
        if seals(device) { sessions.agree(for: device, now: now) }
    }

    private func seals(_ device: DeviceAttributes) -> Bool {
        mode != .off && device.contains(DevicePushKeys.p256dhAttribute)
    }

    /// What Apple sees of a sealed push: the generic alert with the alert's presentation (sound,
    /// category, interruption level, relevance, badge: nothing that names a person or a
    /// conversation), or a silent push's wake-up, and the ciphertext.
    /// Written as bytes (each push writes one): the ciphertext (base64url: nothing to escape) is
    /// copied in as it is, and only the alert's text goes through the JSON string encoder.
    private func sealedPayload(_ ciphertext: [UInt8]?, pushType: String, template: String?, presentation: [UInt8]) -> [UInt8] {
        var payload = [UInt8]()
        payload.reserveCapacity(120 + (ciphertext?.count ?? 0))
        switch pushType {
        case "background": payload += Self.silentAPS
        case "voip": payload += Self.voipAPS
        default:
            payload += Self.alertAPSHead
            payload += (template.flatMap { templateAlerts[$0] } ?? genericAlert).encoded
            payload += Self.alertAPSTail
            payload += presentation
            payload.append(UInt8(ascii: "}"))
        }
        if let ciphertext {
            payload += Self.sealedMemberHead
            payload += ciphertext
            payload.append(UInt8(ascii: "\""))
        }
        payload.append(UInt8(ascii: "}"))
        return payload
    }

    private static let silentAPS = Array(#"{"aps":{"content-available":1}"#.utf8)
    private static let voipAPS = Array(#"{"aps":{}"#.utf8)
    private static let alertAPSHead = Array(#"{"aps":{"alert":"#.utf8)
    private static let alertAPSTail = Array(#","mutable-content":1"#.utf8)
    private static let sealedMemberHead = Array(#","\#(sealedMember)":""#.utf8)
}

/// A provider whose pushes its app's `PushSealing` prepares first: signed, and sealed to the
/// devices that registered keys. A batch signs each document once.
public struct SealingPushProvider: PushProvider {
    public let base: any PushProvider
    public let sealing: PushSealing
    /// What the base's service carries.
    let carriage: PushCarriage
    let now: @Sendable () -> Date

    public init(base: any PushProvider, sealing: PushSealing, carriage: PushCarriage, now: @escaping @Sendable () -> Date) {
        self.base = base
        self.sealing = sealing
        self.carriage = carriage
        self.now = now
    }

    public var platform: Platform { base.platform }
    public var stats: ProviderStats { base.stats }

    public func send(_ delivery: ClaimedDelivery) async -> PushOutcome {
        await base.send(prepared([delivery])[0])
    }

    public func send(_ deliveries: [ClaimedDelivery]) async -> [PushOutcome] {
        await base.send(prepared(deliveries))
    }

    public func shutdown() async { await base.shutdown() }

    /// A batch signed and sealed, its CPU time counted: one clock reading for its issue time and
    /// the sessions' age, and a signature table only when there is something to share: two
    /// deliveries of one event (a fan-out's page). Each lookup hashes a whole document, which a
    /// batch of distinct events (Matrix notifies, single events) would pay for nothing.
    private func prepared(_ deliveries: [ClaimedDelivery]) -> [ClaimedDelivery] {
        var signatures = SignedDocuments(remembering: Self.shareAnEvent(deliveries))
        let started = SealingCost.threadCPUNanoseconds()
        let date = now()
        let issuedAt = Self.seconds(date)
        let pushes = deliveries.map { delivery in
            var prepared = delivery
            prepared.push = sealing.prepare(
                delivery.push, for: delivery.device.attributes, template: delivery.template, issuedAt: issuedAt,
                limit: carriage.maximumPayload(delivery.push.pushType), signatures: &signatures, now: date,
                opaqueCollapseID: carriage.bodyReachesOnlyTheDevice, rideAlong: delivery.rideAlong)
            return prepared
        }
        sealing.cost.add(pushes: pushes.count, since: started)
        return pushes
    }

    /// Whether two of the deliveries belong to one event (a batch of one never does: no set is made).
    private static func shareAnEvent(_ deliveries: [ClaimedDelivery]) -> Bool {
        guard deliveries.count > 1 else { return false }
        var events = Set<String>(minimumCapacity: deliveries.count)
        return deliveries.contains { !events.insert($0.eventID).inserted }
    }

    private static func seconds(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970
        return seconds.isFinite ? Int64(max(0, min(seconds, 1e15))) : 0
    }
}

/// Each device's sealing key: an application-server P-256 key and its ECDH with the device's
/// `p256dh`, the part of a sealed push that costs more than everything else together. It is made
/// when the device registers its keys (`agree(for:now:)`: the registration pays it, not a push),
/// else at the device's first push on this instance (another instance registered it, or this one
/// restarted), and kept for `lifetime`, for at most `capacity` devices. Each push still has its own
/// salt, so its own content key and nonce. Whoever reads the memory of a running Herald could open
/// a device's pushes of its key's lifetime with Apple's or Google's copies; a lifetime of zero makes
/// a key per push, as RFC 8291 does.
///
/// Kept compactly, so a million devices fit (`HERALD_SEALING_CACHE_MIB`): per device its 97 bytes
/// (the combined key and the server's public key) in one array, the second it was made, and a
/// 128-bit name of the device's keys in the index; at most `bytesPerDevice` in all.
public final class SealingSessions: Sendable {
    /// A day: a device that registers daily (every launch of its app) never pays for its key in a push.
    public static let defaultLifetime: TimeInterval = 86_400
    /// The longest lifetime a setting may ask for: a week.
    public static let maximumLifetime: TimeInterval = 604_800
    /// What one device's kept key costs at most: 97 bytes of key, 4 of time, and the index's
    /// entry (a 16-byte name and a 4-byte slot) at up to 2.7 buckets per device.
    public static let bytesPerDevice = 160
    /// The default budget per sealing app: 160 MiB, 1,048,576 devices.
    public static let defaultBudgetMiB = 160
    public let lifetime: TimeInterval
    public let capacity: Int
    private let table = Mutex(Table())
    private let madeAtRegistration = Atomic<Int>(0)
    private let madeAtPush = Atomic<Int>(0)

    /// - Parameter lifetime: 0 to `maximumLifetime` seconds.
    /// - Parameter capacity: devices kept at most (default: what `defaultBudgetMiB` holds).
    public init(lifetime: TimeInterval = defaultLifetime, capacity: Int = SealingSessions.capacity(budgetMiB: defaultBudgetMiB)) {
        self.lifetime = max(0, min(lifetime, Self.maximumLifetime))
        self.capacity = max(1, capacity)
    }

    /// The devices a memory budget holds.
    public static func capacity(budgetMiB: Int) -> Int { max(1, budgetMiB) * (1 << 20) / bytesPerDevice }

    /// The session of the device with these attributes (its keys among them), made now if it has
    /// none younger than `lifetime`. Kept by a name of the attributes' stored form, so a kept
    /// session costs no parse of them and no check of the point.
    func session(for attributes: DeviceAttributes, now: Date) -> WebPushSession? {
        let name = Name(attributes.storedForm)
        if let kept = table.withLock({ $0.session(name, madeAfter: Self.second(now.addingTimeInterval(-lifetime)), notAfter: Self.second(now)) }) {
            return kept
        }
        let session = make(for: attributes, name: name, now: now)
        if session != nil { madeAtPush.add(1, ordering: .relaxed) }
        return session
    }

    /// Makes the device's key now, replacing the one kept: the device registered its keys (again).
    /// False when the attributes hold no keys or the lifetime is zero (every push makes its own).
    @discardableResult
    public func agree(for attributes: DeviceAttributes, now: Date) -> Bool {
        guard lifetime > 0, make(for: attributes, name: Name(attributes.storedForm), now: now) != nil else { return false }
        madeAtRegistration.add(1, ordering: .relaxed)
        return true
    }

    /// Devices with a kept session.
    public var count: Int { table.withLock { $0.index.count } }

    /// Keys made so far by registrations, and by pushes (each an ECDH a push paid: the device's key
    /// had expired, another instance registered it, or this one restarted).
    public var made: (atRegistration: Int, atPush: Int) {
        (madeAtRegistration.load(ordering: .relaxed), madeAtPush.load(ordering: .relaxed))
    }

    private static func second(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }

    private func make(for attributes: DeviceAttributes, name: Name, now: Date) -> WebPushSession? {
        guard let keys = DevicePushKeys(attributes),
            let session = try? WebPushSession(to: keys.publicKey, receiverBytes: keys.p256dh, auth: keys.auth)
        else { return nil }
        guard lifetime > 0 else { return session }
        let second = Self.second(now), fresh = Self.second(now.addingTimeInterval(-lifetime))
        table.withLock { table in
            // Full: drop the expired, then (none were) the older half, rather than search for the
            // oldest on every push.
            if table.index[name] == nil, table.index.count >= capacity {
                table.keep { $0 > fresh && $0 <= second }
                if table.index.count >= capacity { table.keepNewerHalf() }
            }
            table.put(name, session, made: second)
        }
        return session
    }

    /// A 128-bit name of a device's stored keys: two keyed hashes, so no two devices' names meet by chance.
    struct Name: Hashable {
        let first: Int, second: Int

        init(_ text: String) {
            var a = Hasher(), b = Hasher()
            a.combine(0 as UInt8)
            b.combine(1 as UInt8)
            a.combine(text)
            b.combine(text)
            (first, second) = (a.finalize(), b.finalize())
        }
    }

    /// The kept keys: slot `i` holds 97 bytes from `i * 97` in `keys` and its second in `made`.
    struct Table {
        static let slotBytes = 97
        var index: [Name: Int32] = [:]
        var keys: [UInt8] = []
        var made: [UInt32] = []

        func session(_ name: Name, madeAfter fresh: Int64, notAfter now: Int64) -> WebPushSession? {
            guard let slot = index[name].map(Int.init) else { return nil }
            let at = Int64(made[slot])
            guard at > fresh, at <= now else { return nil }
            let start = slot * Self.slotBytes
            return WebPushSession(
                inputKeyingMaterial: Array(keys[start..<(start + 32)]), senderPublicKey: Array(keys[(start + 32)..<(start + Self.slotBytes)]))
        }

        mutating func put(_ name: Name, _ session: WebPushSession, made second: Int64) {
            let bytes = session.inputKeyingMaterial + session.senderPublicKey
            guard bytes.count == Self.slotBytes else { return }
            let stamp = UInt32(clamping: second)
            if let slot = index[name].map(Int.init) {
                keys.replaceSubrange((slot * Self.slotBytes)..<((slot + 1) * Self.slotBytes), with: bytes)
                made[slot] = stamp
            } else {
                index[name] = Int32(made.count)
                keys += bytes
                made.append(stamp)
            }
        }

        /// Keeps the slots whose second `keeps` holds, packed again.
        mutating func keep(_ keeps: (Int64) -> Bool) {
            var packed = Table()
            for (name, slot) in index where keeps(Int64(made[Int(slot)])) {
                let start = Int(slot) * Self.slotBytes
                packed.index[name] = Int32(packed.made.count)
                packed.keys += keys[start..<(start + Self.slotBytes)]
                packed.made.append(made[Int(slot)])
            }
            self = packed
        }

        mutating func keepNewerHalf() {
            let median = made.sorted()[made.count / 2]
            keep { $0 > Int64(median) }
        }
    }
}

/// What signing and sealing an app's pushes has cost on this instance: the pushes prepared and the
/// CPU time their preparation took, by the preparing thread's own clock (so a thread that waited
/// for a core costs nothing), for `/metrics`. The two clock readings per batch cost about 0.6 µs
/// together (measured in `herald serve`), which the figure includes.
public final class SealingCost: Sendable {
    private let pushes = Atomic<Int>(0)
    private let nanoseconds = Atomic<Int>(0)

    public init() {}

    /// Pushes prepared so far, and the CPU seconds they took.
    public var total: (pushes: Int, cpuSeconds: Double) {
        (pushes.load(ordering: .relaxed), Double(nanoseconds.load(ordering: .relaxed)) / 1e9)
    }

    /// Counts `count` pushes prepared since the thread's clock read `started`.
    func add(pushes count: Int, since started: Int) {
        pushes.add(count, ordering: .relaxed)
        nanoseconds.add(max(0, Self.threadCPUNanoseconds() - started), ordering: .relaxed)
    }

    /// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), in nanoseconds.
    static func threadCPUNanoseconds() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Int(time.tv_sec) * 1_000_000_000 + Int(time.tv_nsec)
    }
}

/// Signatures made for the documents of one batch, by the document's bytes, and the opaque
/// collapse ids made for it: a fan-out signs its document and hashes its collapse id once. The
/// bytes are hashed in one call (an array of bytes hashes byte by byte, which cost a sealed push
/// more than its HMACs).
public struct SignedDocuments: Sendable {
    private struct Key: Hashable {
        let bytes: [UInt8]
        func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
    }
    private var signed: [Key: SignedPush] = [:]
    private var opaqueIDs: [String: String] = [:]
    private var presentations: [Key: [UInt8]] = [:]
    private var stripped: [Key: [UInt8]] = [:]
    private var lastStripped: (from: [UInt8], to: [UInt8])?
    private let remembering: Bool

    /// - Parameter remembering: false for a batch of one push, which has nothing to share: it
    ///   then keeps nothing (a table costs a single push its allocation and a hash of its bytes).
    public init(remembering: Bool = true) { self.remembering = remembering }

    /// The signature made for `document`, if one was.
    public subscript(document: [UInt8]) -> SignedPush? {
        get { remembering ? signed[Key(bytes: document)] : nil }
        set { if remembering { signed[Key(bytes: document)] = newValue } }
    }

    /// The `aps` members of an alert document's presentation that a sealed push carries outside
    /// the seal (`,"sound":"default",…`), read once a batch.
    public mutating func presentation(of document: RenderedPush) -> [UInt8] {
        guard document.pushType == .alert else { return [] }
        if remembering, let known = presentations[Key(bytes: document.payload)] { return known }
        let members = PushPresentation.apsMembers(of: document.payload)
        if remembering { presentations[Key(bytes: document.payload)] = members }
        return members
    }

    /// The push without its Kasia sender proof (an unsealed device's), parsed once a batch: a
    /// fan-out's devices share one push.
    public mutating func withoutProof(_ push: RenderedPush) -> RenderedPush {
        guard remembering else { return KasiaTemplate.withoutProof(push) }
        var out = push
        // The last one first: a page's pushes share one payload's storage, which compares in O(1)
        // where a table lookup hashes every byte.
        if let last = lastStripped, last.from == push.payload {
            out.payload = last.to
            return out
        }
        if let known = stripped[Key(bytes: push.payload)] {
            out.payload = known
        } else {
            out = KasiaTemplate.withoutProof(push)
            stripped[Key(bytes: push.payload)] = out.payload
        }
        lastStripped = (push.payload, out.payload)
        return out
    }

    /// `key`'s opaque form of the collapse id `id`, made once a batch.
    public mutating func opaqueCollapseID(_ id: String, with key: PushSigningKey) -> String {
        guard remembering else { return key.opaqueCollapseID(id) }
        if let known = opaqueIDs[id] { return known }
        let made = key.opaqueCollapseID(id)
        opaqueIDs[id] = made
        return made
    }
}
