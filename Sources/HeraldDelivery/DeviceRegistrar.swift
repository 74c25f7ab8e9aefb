import Crypto
import Foundation
import HeraldAPNsCore
public import HeraldCore
import HeraldFCMCore
public import HeraldPushCore
public import HeraldStore
public import KasiaCrypto
public import KasiaProtocol

/// The registration use case, beside `EventPublisher`: what a device asks to hear, checked
/// against its app's policy and limits, then stored. Every registration route decodes its body
/// into these values, calls here with the grant its app's policy gave the request, and encodes
/// the answer; a refusal is a `Refusal` naming the field at fault.
public struct DeviceRegistrar: Sendable {
    /// The limits and checks registrations meet.
    public struct Rules: Sendable {
        /// 1,000 watch keys per device, 100 aliases per route.
        public var maximumWatchKeys = WatchSet.defaultMaximumKeys
        public var maximumAliases = ContextualRoute.defaultMaximumAliases
        /// The Kaspa network served (`HERALD_KASPA_NETWORK`): addresses of another network are
        /// refused. Nil accepts every network.
        public var kaspaNetwork: KaspaAddress.Prefix?
        /// Checks the wallet policy's signatures (libsecp256k1 where the build has it); nil
        /// refuses wallet-policy registrations (unavailable).
        public var schnorrVerifier: (any SchnorrVerifier)? = DeviceRegistrar.defaultVerifier
        /// The platforms registrations may name, each with its push service's token rule (a
        /// `DeviceRegistrationRule` for a service whose devices register otherwise). By default
        /// the built-in platforms, Web Push refused (`NoWebPushRule`: no VAPID key, no SSRF rule).
        public var tokenRules: [Platform: any DeviceRegistrationRule] =
            [.ios: TokenRegistrationRule(APNsTokenRule()), .android: TokenRegistrationRule(FCMTokenRule()), .web: NoWebPushRule()]
        public init() {}
    }

    /// One of the device's own addresses; under the `wallet` policy with the wallet's Kaspa
    /// message signature (hex) of `herald-register:<app>:<SHA-256 of the device token, hex>:<timestamp>`.
    public struct OwnAddress: Sendable {
        public var address: String
        public var timestamp: Int64?
        public var signature: String?
        public init(address: String, timestamp: Int64? = nil, signature: String? = nil) {
            self.address = address
            self.timestamp = timestamp
            self.signature = signature
        }
    }

    /// A contextual route as sent: a peer's address and the aliases that reach it.
    public struct Route: Sendable {
        public var peerAddress: String?
        public var aliases: [String]?
        public init(peerAddress: String?, aliases: [String]?) {
            self.peerAddress = peerAddress
            self.aliases = aliases
        }
    }

    /// What a device watches, as sent (`watched_addresses`, `addresses`, `contextual_routes`).
    public struct WatchRequest: Sendable {
        public var watched: [String]?
        public var own: [OwnAddress]?
        public var routes: [Route]?
        public init(watched: [String]?, own: [OwnAddress]?, routes: [Route]?) {
            self.watched = watched
            self.own = own
            self.routes = routes
        }
    }

    /// A browser's push subscription as sent: its endpoint and keys.
    public struct Subscription: Sendable {
        public var endpoint: String?
        public var p256dh: String?
        public var auth: String?
        public init(endpoint: String?, p256dh: String?, auth: String?) {
            self.endpoint = endpoint
            self.p256dh = p256dh
            self.auth = auth
        }
    }

    /// A device's keys for sealed pushes as sent (`push_keys`).
    public struct PushKeys: Sendable {
        public var p256dh: String?
        public var auth: String?
        public init(p256dh: String?, auth: String?) {
            self.p256dh = p256dh
            self.auth = auth
        }
    }

    /// A native registration (`POST /v1/push/register`) as sent.
    public struct Request: Sendable {
        public var platform: String?
        public var tokenKind: String?
        public var deviceToken: String?
        public var subscription: Subscription?
        public var environment: String?
        public var deviceID: String?
        public var watch: WatchRequest
        public var pushKeys: PushKeys?
        public init(
            platform: String?, tokenKind: String?, deviceToken: String?, subscription: Subscription?, environment: String?,
            deviceID: String?, watch: WatchRequest, pushKeys: PushKeys? = nil
        ) {
            self.pushKeys = pushKeys
            self.platform = platform
            self.tokenKind = tokenKind
            self.deviceToken = deviceToken
            self.subscription = subscription
            self.environment = environment
            self.deviceID = deviceID
            self.watch = watch
        }
    }

    public let store: any DeviceRegistry
    public let apps: AppDirectory
    public let rules: Rules
    public let clock: any HeraldClock

    public init(store: any DeviceRegistry, apps: AppDirectory, rules: Rules, clock: any HeraldClock) {
        self.store = store
        self.apps = apps
        self.rules = rules
        self.clock = clock
    }

    /// libsecp256k1 where the build links it.
    public static var defaultVerifier: (any SchnorrVerifier)? {
        #if canImport(CSecp256k1)
        LibSecp256k1()
        #else
        nil
        #endif
    }

    /// How far a wallet proof's timestamp may be from now: 10 minutes.
    static let proofWindow: Int64 = 600

    // MARK: The native API

    /// Registers (or registers again) the device; returns its watch set.
    public func register(_ request: Request, app: String, grant: RegistrationGrant) async throws -> WatchSet {
        let (registration, known) = try await checked(request, app: app, grant: grant)
        var reserved = 0
        if let settings = apps[app], !known { reserved = try await admitNew(app: settings, field: "device_token") }
        defer { if reserved > 0 { apps[app]?.admissions.release(reserved) } }
        let now = clock.now()
        let record = try await store.register(registration, now: now)
        apps[app]?.sealing?.registered(record.attributes, now: now)
        return registration.watchSet
    }

    /// A native registration checked as the API checks it, not stored: the registration, and
    /// whether its token is registered already. `provingOwnership: false` takes own addresses
    /// without the wallet policy's signatures (an operator's import: the database's credentials
    /// are its proof).
    /// Where `checked` finds the device a token already has.
    public enum Registered: Sendable {
        /// One read of the store.
        case inStore
        /// Read by the caller for many tokens at once (by lookup form; absent: none).
        case given([String: DeviceRecord])
    }

    public func checked(
        _ request: Request, app: String, grant: RegistrationGrant, provingOwnership: Bool = true, registered: Registered = .inStore
    ) async throws -> (registration: Registration, known: Bool) {
        try AppDirectory.require(grant, covers: request.deviceID, field: "device_id")
        guard let platformText = request.platform else { throw Refusal.missing("platform") }
        let platform = Platform(platformText)
        guard let tokenRule = rules.tokenRules[platform] else {
            throw Refusal.invalid("platform", "platform is one of \(rules.tokenRules.keys.map(\.rawValue).sorted().joined(separator: ", "))")
        }
        var kind = DeviceToken.Kind.token
        if let text = request.tokenKind {
            guard let parsed = DeviceToken.Kind(rawValue: text) else { throw Refusal.invalid("token_kind", "token_kind is token or fid") }
            guard tokenRule.tokenKinds.contains(parsed) else {
                throw Refusal.invalid("token_kind", "token_kind \(parsed.rawValue) is for \(platforms { $0.tokenKinds.contains(parsed) }) devices")
            }
            kind = parsed
        }
        guard request.subscription == nil || tokenRule.bringsOwnKeys else {
            throw Refusal.unprocessable("subscription", "subscription is for platform \(platforms { $0.bringsOwnKeys })")
        }
        let (token, serviceValues) = try await tokenRule.device(from: request, kind: kind)
        var attributes = try self.attributes(environment: request.environment, app: app).merging(serviceValues)
        if let keys = request.pushKeys {
            guard !tokenRule.bringsOwnKeys else {
                throw Refusal.unprocessable("push_keys", "push_keys is for devices with a token: a subscription brings its own keys")
            }
            attributes = try DevicePushKeys(p256dh: keys.p256dh, auth: keys.auth).stored(in: attributes)
        } else if !tokenRule.bringsOwnKeys {
            try Self.requireUnsealedAllowed(apps[app], field: "push_keys")
        }
        // No control characters: a NUL would end the stored text early, and the device would
        // answer to another id than the one registered.
        if let id = request.deviceID { _ = try Refusal.printable(id, field: "device_id", maximum: 256) }
        let watchSet = try self.watchSet(request.watch)
        try Self.requireGranted(request.watch, by: grant)
        if provingOwnership { try proveOwnership(request.watch.own, app: app, token: token.value) }
        // A token registered under one identity moves to another only with that identity's token,
        // and a device that registered keys is never sent in clear by a registration without them.
        let existing: DeviceRecord? = switch registered {
        case .inStore: try await store.devices(app: app, tokens: [DeviceToken.lookupForm(token.value)]).first
        case .given(let devices): devices[DeviceToken.lookupForm(token.value)]
        }
        let known = try requireRebindable(
            existing, app: app, grant: grant, bringsKeys: request.pushKeys != nil || tokenRule.bringsOwnKeys)
        return (Registration(app: app, token: token, attributes: attributes, deviceID: request.deviceID, watchSet: watchSet), known)
    }

    /// Replaces a registered device's watch set; returns it. A web subscription is named by its
    /// endpoint, in `device_token` or as the subscription.
    public func update(token: String?, subscriptionEndpoint: String?, watch: WatchRequest, app: String, grant: RegistrationGrant) async throws -> WatchSet {
        guard let token = token ?? subscriptionEndpoint else { throw Refusal.missing("device_token") }
        try await requireOwned(token, app: app, grant: grant)
        let watchSet = try self.watchSet(watch)
        try Self.requireGranted(watch, by: grant)
        try proveOwnership(watch.own, app: app, token: DeviceToken.lookupForm(token))
        guard try await store.updateWatchSet(app: app, token: DeviceToken.lookupForm(token), watchSet: watchSet, now: clock.now()) else {
            throw Refusal(.notFound, code: "not_registered", message: "no device with this token", field: "device_token")
        }
        return watchSet
    }

    /// Removes the device; false when there was none.
    public func unregister(token: String?, app: String, grant: RegistrationGrant) async throws -> Bool {
        guard let token else { throw Refusal.missing("device_token") }
        try await requireOwned(token, app: app, grant: grant)
        return try await store.unregister(app: app, token: DeviceToken.lookupForm(token))
    }

    /// The device and its watch set, or nil when the token is not registered.
    public func status(token: String, app: String, grant: RegistrationGrant) async throws -> (DeviceRecord, WatchSet)? {
        try await requireOwned(token, app: app, grant: grant)
        return try await store.status(app: app, token: DeviceToken.lookupForm(token), now: clock.now())
    }

    // MARK: Every registration route

    /// Stores a registration a compatibility route built, under the grant its app's policy gave
    /// the request, once the app's device limit admits it. The same rules as the native route: a
    /// token another identity registered is not taken over, nor one with keys sent in clear.
    public func register(_ registration: Registration, app: AppSettings, grant: RegistrationGrant, field: String) async throws -> DeviceRecord {
        let bringsKeys = DevicePushKeys(registration.attributes) != nil || rules.tokenRules[registration.token.platform]?.bringsOwnKeys == true
        if !bringsKeys { try Self.requireUnsealedAllowed(app, field: field) }
        try Self.requireGranted(WatchRequest(watched: registration.watchSet.watched.map(\.description), own: nil, routes: nil), by: grant)
        let existing = try await store.devices(app: app.id, tokens: [DeviceToken.lookupForm(registration.token.value)]).first
        let known = try requireRebindable(existing, app: app.id, grant: grant, bringsKeys: bringsKeys, field: field)
        let reserved = known ? 0 : try await admitNew(app: app, field: field)
        defer { app.admissions.release(reserved) }
        let now = clock.now()
        let record = try await store.register(registration, now: now)
        app.sealing?.registered(record.attributes, now: now)
        return record
    }

    /// A device token of `platform` from a body, checked by its service's rule, or a refusal naming `field`.
    public func token(_ text: String?, platform: Platform, kind: DeviceToken.Kind = .token, field: String = "device_token") throws -> DeviceToken {
        guard let text else { throw Refusal.missing(field) }
        guard let rule = rules.tokenRules[platform] else { throw Refusal.invalid(field, DeviceTokenError.unknownPlatform(platform).description) }
        do {
            return try rule.token(text, kind: kind)
        } catch {
            throw Refusal.invalid(field, error.description)
        }
    }

    /// Refuses (`device_limit`) a token the app does not have yet once it has its
    /// `maximumDevices`, counting the new devices other requests are admitting now (a token
    /// already registered may always register again: the caller knows it from `requireRebindable`).
    /// - Returns: the admissions reserved (1 under a limit, else 0): the caller releases them once
    ///   the device is written.
    func admitNew(app: AppSettings, field: String) async throws -> Int {
        guard let maximum = app.maximumDevices else { return 0 }
        let before = app.admissions.reserve(1)
        var admitted = false
        defer { if !admitted { app.admissions.release(1) } }
        guard try await store.deviceCount(app: app.id) + before >= maximum else {
            admitted = true
            return 1
        }
        throw Refusal(.forbidden, code: "device_limit", message: "app \(app.id) has its maximum of \(maximum) devices", field: field)
    }

    // MARK: Checks

    /// An app that seals every push (`sealed: required`) takes no device without keys for it.
    static func requireUnsealedAllowed(_ app: AppSettings?, field: String) throws {
        guard let app, app.sealing?.mode == .required else { return }
        throw Refusal.unprocessable(field, "app \(app.id) seals every push (sealed: required): register push_keys (p256dh and auth)")
    }

    /// The device's builds as named (`environment`), or without a name the app's own: production
    /// or sandbox as it is configured.
    private func attributes(environment text: String?, app: String) throws -> DeviceAttributes {
        guard let text else { return DeviceAttributes(production: apps[app]?.production == true) }
        guard let attributes = DeviceAttributes(environment: text) else {
            throw Refusal.invalid("environment", "environment is production or sandbox")
        }
        return attributes
    }

    /// Under a signed policy, a device watches only what its token grants: its own identity's keys
    /// and the `keys` claim's (naming the first other one). The same holds for the Kaspa addresses
    /// it calls its own and the peers of its contextual routes: each reaches the device a Kasia
    /// event, so each needs the grant (`keys` naming it).
    static func requireGranted(_ watch: WatchRequest, by grant: RegistrationGrant) throws {
        guard grant != .anyIdentity else { return }
        func check(_ keys: [String], _ field: String) throws {
            for (i, key) in keys.enumerated() where !grant.permitsWatching(key) {
                throw Refusal(.forbidden, code: "forbidden", message: "the registration token does not grant \(key)", field: "\(field)[\(i)]")
            }
        }
        try check(watch.watched ?? [], "watched_addresses")
        try check((watch.own ?? []).map(\.address), "addresses")
        for (i, route) in (watch.routes ?? []).enumerated() where route.peerAddress.map(grant.permitsWatching) == false {
            throw Refusal(
                .forbidden, code: "forbidden", message: "the registration token does not grant \(route.peerAddress)",
                field: "contextual_routes[\(i)].peer_address")
        }
    }

    /// Under a signed policy, a request may touch a registered token only if the device it
    /// belongs to has the identity its token grants.
    private func requireOwned(_ token: String, app: String, grant: RegistrationGrant) async throws {
        guard grant != .anyIdentity else { return }
        guard let device = try await store.devices(app: app, tokens: [DeviceToken.lookupForm(token)]).first else { return }
        try AppDirectory.require(grant, covers: device.deviceID, field: "device_token")
    }

    /// What registering a known token again may not do, on every route: take it from the identity
    /// that registered it (`requireOwned`), or drop the keys its pushes are sealed to, which would
    /// send them in clear (`push_keys_required`, naming `push_keys`; unregistering first is the owner's way).
    /// - Returns: whether the token is registered already (one index lookup, shared with the device limit).
    private func requireRebindable(_ device: DeviceRecord?, app: String, grant: RegistrationGrant, bringsKeys: Bool, field: String = "device_token") throws -> Bool {
        guard let device else { return false }
        if grant != .anyIdentity { try AppDirectory.require(grant, covers: device.deviceID, field: field) }
        if !bringsKeys, DevicePushKeys(device.attributes) != nil, apps[app]?.sealing.map({ $0.mode != .off }) ?? true {
            throw Refusal(
                .conflict, code: "push_keys_required",
                message: "this token registered push_keys, and its pushes are sealed to them: a registration without them would send them in clear; send push_keys (or unregister the token first)",
                field: "push_keys")
        }
        return true
    }

    /// The platforms whose rules meet `condition`, as a refusal names them ("android").
    private func platforms(_ condition: (any DeviceRegistrationRule) -> Bool) -> String {
        rules.tokenRules.filter { condition($0.value) }.keys.map(\.rawValue).sorted().joined(separator: " or ")
    }

    /// The wallet policy: each own address must come with its owner's signature over this
    /// device token, made within the last ten minutes (naming `addresses[i]` otherwise).
    private func proveOwnership(_ entries: [OwnAddress]?, app: String, token: String) throws {
        guard case .wallet = apps[app]?.registration else { return }
        guard let verifier = rules.schnorrVerifier else {
            throw Refusal(.unavailable, code: "unavailable", message: "this build cannot check Kaspa signatures")
        }
        let tokenHash = Self.tokenHash(token)
        let now = Int64(clock.now().timeIntervalSince1970)
        for (i, entry) in (entries ?? []).enumerated() {
            let field = "addresses[\(i)]"
            func refuse(_ reason: String) -> Refusal { Refusal(.forbidden, code: "unproven_address", message: reason, field: field) }
            guard let timestamp = entry.timestamp, let signatureHex = entry.signature else {
                throw refuse("an own address needs its wallet's signature and timestamp under the wallet policy")
            }
            guard (now - Self.proofWindow...now + Self.proofWindow).contains(timestamp) else {
                throw refuse("the signature's timestamp is more than 10 minutes from now")
            }
            guard let signature = Hex.decode(signatureHex), signature.count == 64, let address = try? KaspaAddress(entry.address) else {
                throw refuse("the signature is 64 bytes of hex")
            }
            let message = "herald-register:\(app):\(tokenHash):\(timestamp)"
            guard KaspaMessageSignature.verify(message: message, signature: signature, address: address, verifier: verifier) else {
                throw refuse("the signature is not this address's over this device token")
            }
        }
    }

    /// What a wallet's signatures name a device by: the SHA-256 of its token's stored form, hex.
    static func tokenHash(_ token: String) -> String {
        Hex.encode(SHA256.hash(data: Array(token.utf8)))
    }

    private func watchSet(_ request: WatchRequest) throws -> WatchSet {
        let own = request.own?.map(\.address)
        guard let watched = request.watched else { throw Refusal.missing("watched_addresses") }
        let maximum = rules.maximumWatchKeys
        // Each list past the limit breaks the document's maxItems (malformed); both together, a
        // rule across fields (unprocessable).
        for (field, count) in [("watched_addresses", watched.count), ("addresses", own?.count ?? 0)] where count > maximum {
            throw Refusal.invalid(field, "at most \(maximum) watch keys per device")
        }
        guard watched.count + (own?.count ?? 0) <= maximum else {
            throw Refusal.unprocessable("watched_addresses", "at most \(maximum) watch keys per device")
        }
        let keys = try watched.enumerated().map { i, text in
            do { return try WatchKey(text) } catch { throw Refusal.invalid("watched_addresses[\(i)]", "\(error)") }
        }
        let addresses = try (own ?? []).enumerated().map { i, text in
            do { return try KaspaAddress(text) } catch { throw Refusal.invalid("addresses[\(i)]", "not a Kaspa address: \(error)") }
        }
        let routes = try self.routes(request.routes)
        if let network = rules.kaspaNetwork {
            // An address of another network could never be paid or written to on this one.
            func check(_ address: KaspaAddress, _ field: String) throws {
                guard address.prefix == network else {
                    throw Refusal.unprocessable(field, "a \(address.prefix.rawValue): address; this instance serves \(network.rawValue): addresses")
                }
            }
            for (i, key) in keys.enumerated() { if case .kaspaAddress(let a) = key { try check(a, "watched_addresses[\(i)]") } }
            for (i, a) in addresses.enumerated() { try check(a, "addresses[\(i)]") }
            for (i, route) in routes.enumerated() { try check(route.peer, "contextual_routes[\(i)].peer_address") }
        }
        return try WatchSet(watched: keys, own: addresses, routes: routes, maximumKeys: .max)
    }

    private func routes(_ routes: [Route]?) throws -> [ContextualRoute] {
        guard (routes?.count ?? 0) <= rules.maximumWatchKeys else {
            throw Refusal.invalid("contextual_routes", "at most \(rules.maximumWatchKeys) routes per device")
        }
        return try (routes ?? []).enumerated().map { i, route in
            guard let peerText = route.peerAddress else { throw Refusal.missing("contextual_routes[\(i)].peer_address") }
            let peer: KaspaAddress
            do { peer = try KaspaAddress(peerText) } catch {
                throw Refusal.invalid("contextual_routes[\(i)].peer_address", "not a Kaspa address: \(error)")
            }
            do {
                return try ContextualRoute(peer: peer, aliases: route.aliases ?? [], maximumAliases: rules.maximumAliases)
            } catch {
                throw Refusal.invalid("contextual_routes[\(i)].aliases", "\(error)")
            }
        }
    }
}
