import Crypto
public import Foundation
public import HeraldCore
public import HeraldPushCore
public import HeraldStore
public import KasiaCrypto
import KasiaProtocol

/// The read-marker use case (SPEC §15), beside `DeviceRegistrar`: a device says a conversation
/// was read up to a position, proves it is the device's and its identity's, and every other device
/// of that identity in the app gets a dismissal (`DismissalDispatcher` sends them).
///
/// The identity: under `wallet`, an own address the caller proved at registration and proves
/// again now (its wallet's signature over the marker); under `signed`, the JWT's `sub`, which the
/// caller's `device_id` must be; otherwise the caller's `device_id`.
public struct ReadMarkers: Sendable {
    /// A marker as sent (`POST /v1/push/read`).
    public struct Request: Sendable {
        public var deviceToken: String?
        public var conversation: String?
        public var upTo: String?
        public var issuedAt: Int64?
        /// Under `wallet`: one of the caller's own addresses, and its signature (hex) of
        /// `herald-read:<app>:<SHA-256 of the device token, hex>:<conversation>:<up_to>:<issued_at>`.
        public var address: String?
        public var signature: String?

        public init(deviceToken: String?, conversation: String?, upTo: String?, issuedAt: Int64?, address: String? = nil, signature: String? = nil) {
            self.deviceToken = deviceToken
            self.conversation = conversation
            self.upTo = upTo
            self.issuedAt = issuedAt
            self.address = address
            self.signature = signature
        }
    }

    /// The default `HERALD_DISMISS_WINDOW_SECONDS`: one dismissal per device and conversation per 10 s.
    public static let defaultDismissWindow: TimeInterval = 10

    public let store: any DeviceRegistry & DismissalLedger
    public let apps: AppDirectory
    public let clock: any HeraldClock
    /// Checks wallet signatures; nil refuses markers under `wallet` (unavailable).
    public let verifier: (any SchnorrVerifier)?
    /// At most one dismissal per device and conversation per this many seconds.
    public let dismissWindow: TimeInterval
    /// Told when a marker armed dismissals, so they go out now.
    public let dispatcher: DismissalDispatcher?

    public init(
        store: any DeviceRegistry & DismissalLedger, apps: AppDirectory, clock: any HeraldClock, verifier: (any SchnorrVerifier)?,
        dismissWindow: TimeInterval = ReadMarkers.defaultDismissWindow, dispatcher: DismissalDispatcher? = nil
    ) {
        self.store = store
        self.apps = apps
        self.clock = clock
        self.verifier = verifier
        self.dismissWindow = dismissWindow
        self.dispatcher = dispatcher
    }

    /// The message a marker's proof signs.
    public static func message(app: String, deviceToken: String, conversation: String, upTo: String, issuedAt: Int64) -> String {
        "herald-read:\(app):\(DeviceRegistrar.tokenHash(DeviceToken.lookupForm(deviceToken))):\(conversation):\(upTo):\(issuedAt)"
    }

    /// Records the marker and arms its siblings' dismissals; returns how many devices are told.
    /// Refused (nothing recorded): a field out of range (400/422), `issued_at` more than 10 minutes
    /// from now (`stale_marker`), a token the caller did not register (`not_registered`), another
    /// identity's device or signature (`forbidden`, `unproven_address`), a marker seen before
    /// (`replayed_marker`); all 403 but the fields' own.
    public func mark(_ request: Request, app: String, grant: RegistrationGrant) async throws -> Int {
        guard let token = request.deviceToken else { throw Refusal.missing("device_token") }
        guard !token.isEmpty, token.utf8.count <= 4_096 else { throw Refusal.invalid("device_token", "device_token is 1 to 4,096 bytes") }
        let conversation = try Self.text(request.conversation, field: "conversation", maximum: 256)
        let upTo = try Self.text(request.upTo, field: "up_to", maximum: 128)
        guard let issuedAt = request.issuedAt else { throw Refusal.missing("issued_at") }
        let now = Int64(clock.now().timeIntervalSince1970)
        // The wallet proofs' window: 10 minutes either side.
        guard (now - DeviceRegistrar.proofWindow...now + DeviceRegistrar.proofWindow).contains(issuedAt) else {
            throw Refusal(.forbidden, code: "stale_marker", message: "issued_at is more than 10 minutes from now", field: "issued_at")
        }
        guard let caller = try await store.devices(app: app, tokens: [DeviceToken.lookupForm(token)]).first else {
            throw Refusal(.forbidden, code: "not_registered", message: "no device of this app has this token", field: "device_token")
        }
        let message = Self.message(app: app, deviceToken: token, conversation: conversation, upTo: upTo, issuedAt: issuedAt)
        let siblings: [DeviceRecord]
        if case .wallet = apps[app]?.registration {
            siblings = try await walletSiblings(of: caller, request, message: message, app: app)
        } else {
            try AppDirectory.require(grant, covers: caller.deviceID, field: "device_token")
            if let id = caller.deviceID { siblings = try await store.devices(app: app, deviceIDs: [id]) } else { siblings = [] }
        }
        let told = siblings.filter { $0.rowID != caller.rowID }.map(\.rowID)
        let marker = ReadMarker(
            app: app, digest: Hex.encode(SHA256.hash(data: Array(message.utf8))), conversation: conversation, upTo: upTo, issuedAt: issuedAt,
            siblings: told)
        guard try await store.record(marker, window: dismissWindow, now: clock.now()) else {
            throw Refusal(.forbidden, code: "replayed_marker", message: "this marker was sent before", field: "issued_at")
        }
        if !told.isEmpty { dispatcher?.markerRecorded() }
        return told.count
    }

    /// A conversation read everywhere, as a source that speaks for the user says (a Matrix notify
    /// with no unread left in a room): `devices` each get its dismissal, under the same window.
    /// - Returns: how many devices are told.
    @discardableResult
    public func dismiss(conversation: String, upTo: String, devices: [DeviceRecord], app: String) async throws -> Int {
        let told = Array(Set(devices.map(\.rowID))).sorted()
        guard !told.isEmpty else { return 0 }
        let now = clock.now()
        let marker = ReadMarker(
            app: app, digest: "source:" + UUID.timeOrdered(at: now).lowercasedString, conversation: conversation, upTo: upTo,
            issuedAt: Int64(now.timeIntervalSince1970), siblings: told)
        _ = try await store.record(marker, window: dismissWindow, now: now)
        dispatcher?.markerRecorded()
        return told.count
    }

    /// Under `wallet`: the caller proved `address` its own at registration and signs this marker
    /// with it now; the siblings are the other devices that proved the same address.
    private func walletSiblings(of caller: DeviceRecord, _ request: Request, message: String, app: String) async throws -> [DeviceRecord] {
        guard let text = request.address else { throw Refusal.missing("address") }
        guard let signatureHex = request.signature else { throw Refusal.missing("signature") }
        guard let address = try? KaspaAddress(text) else { throw Refusal.invalid("address", "not a Kaspa address") }
        guard let signature = Hex.decode(signatureHex), signature.count == 64 else {
            throw Refusal.invalid("signature", "the signature is 64 bytes of hex")
        }
        guard let verifier else { throw Refusal(.unavailable, code: "unavailable", message: "this build cannot check Kaspa signatures") }
        let own = try await store.watchSets(rowIDs: [caller.rowID])[caller.rowID]?.own ?? []
        guard own.contains(address) else {
            throw Refusal(.forbidden, code: "unproven_address", message: "this device did not prove this address its own", field: "address")
        }
        guard KaspaMessageSignature.verify(message: message, signature: signature, address: address, verifier: verifier) else {
            throw Refusal(.forbidden, code: "unproven_address", message: "the signature is not this address's over this marker", field: "signature")
        }
        let candidates = try await store.devices(app: app, watching: address.description)
        let sets = try await store.watchSets(rowIDs: candidates.map(\.rowID))
        return candidates.filter { sets[$0.rowID]?.own.contains(address) == true }
    }

    /// A marker's text field: present, 1 to `maximum` characters, none of them a control character.
    private static func text(_ value: String?, field: String, maximum: Int) throws -> String {
        guard let value else { throw Refusal.missing(field) }
        return try Refusal.printable(value, field: field, maximum: maximum)
    }
}
