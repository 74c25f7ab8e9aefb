public import HeraldCore

/// How an app's devices may register.
public enum RegistrationPolicy: Sendable, Hashable {
    /// Anyone may register a device (the app's own users call the API directly).
    case open
    /// Registration needs one of these keys as a bearer token.
    case bearer(Set<String>)
    /// Registration needs a short-lived JWT from the app's backend (`aud` = the app, `exp`
    /// within an hour), and may claim only the identity in its `sub`.
    case signed(RegistrationSigningKeys)
    /// Anyone may register, but each of a device's own Kaspa `addresses` needs the wallet's
    /// signature over the device token (Kaspa message signing): only the key's owner can have
    /// its payments and handshakes pushed to a device.
    case wallet
}

/// What a registration request has proven.
public enum RegistrationGrant: Sendable, Hashable {
    /// The app's policy asks for nothing more (open) or for a shared key only (bearer).
    case anyIdentity
    /// A signed token granted this identity only, and these watch keys besides its own
    /// (`session:<id>`, `user:<id>`); a key ending in `*` grants every key it begins.
    case identity(String, keys: [String] = [])

    /// The identity a signed token granted; nil under open and bearer policies.
    public var identity: String? {
        if case .identity(let granted, _) = self { granted } else { nil }
    }

    /// Whether the request may act for `identity` (an `X-Device-ID`, a `session_id`, a `device_id`).
    public func permits(_ identity: String?) -> Bool {
        switch self {
        case .anyIdentity: true
        case .identity(let granted, _): identity.map { SecretComparison.equals($0, granted) } ?? false
        }
    }

    /// Whether a device registered under this grant may watch `key` (its text form).
    public func permitsWatching(_ key: String) -> Bool {
        switch self {
        case .anyIdentity: return true
        case .identity(let granted, let keys):
            // Exact bytes, as the store compares keys: `e` + U+0301 is not `é`.
            let bytes = Array(key.utf8)
            if bytes == Array(("session:" + granted).utf8) || bytes == Array(("user:" + granted).utf8) { return true }
            return keys.contains { pattern in
                let p = Array(pattern.utf8)
                return p.last == UInt8(ascii: "*") ? bytes.starts(with: p.dropLast()) : p == bytes
            }
        }
    }
}

/// One app served by this instance: who may publish to it and register with it.
public struct AppSettings: Sendable {
    public var id: String
    /// Bearer keys accepted on `/v1/events` for this app.
    public var publishKeys: Set<String>
    public var registration: RegistrationPolicy
    /// The app's `apns-topic` and whether it pushes to production (GhostTalk's `/apns/stats`).
    public var topic: String
    public var production: Bool
    /// Titles and bodies of `agent.event` (Claudiator's table unless overridden).
    public var agentEventTexts = AgentEventTemplate.Texts()
    /// GhostTalk's testing-only `POST /apns/send` (off unless enabled; always behind a publisher key).
    public var ghostTalkSendEnabled = false
    /// Events may ask for `interruption_level: critical` (the app holds Apple's critical-alert
    /// entitlement); off by default (`critical_alerts`, `HERALD_CRITICAL_ALERTS`).
    public var allowsCriticalAlerts = false
    /// A Matrix notify pushes to the app's devices that registered another way (the native API,
    /// a compatibility route) too; off by default: a notify needs no credentials, so it reaches
    /// only the devices Matrix pushers made (`matrix_reaches_registered_devices`).
    public var matrixReachesRegisteredDevices = false
    /// The most devices the app may have; a registration of a new token past it is refused.
    public var maximumDevices: Int?
    /// New devices being admitted now, for `maximumDevices` under concurrent registrations.
    public let admissions = DeviceAdmissions()
    /// What the app's Kasia pushes show the push services (`privacy: minimal` keeps the sender,
    /// amount and thread id out).
    public var privacy = PushPrivacy.standard
    /// How its pushes are signed and sealed (docs/signed-pushes.md); nil: neither (in-process tests).
    public var sealing: PushSealing?
    /// How its alerts present when an event does not say (`presentation:` in `HERALD_CONFIG`).
    public var presentation = PresentationDefaults()

    public init(
        id: String, publishKeys: Set<String> = [], registration: RegistrationPolicy = .open, topic: String? = nil,
        production: Bool = false
    ) {
        self.id = id
        self.publishKeys = publishKeys
        self.registration = registration
        self.topic = topic ?? "com.example." + id
        self.production = production
    }
}

/// The apps of one instance, and which one a request serves.
public struct AppDirectory: Sendable {
    /// In configuration order.
    public let apps: [AppSettings]
    /// Each app's place in `apps`, where `read` finds its settings without copying them.
    private let indexByID: [String: Int]

    /// - Precondition: ids are unique (the configuration checks it).
    public init(_ apps: [AppSettings]) {
        self.apps = apps
        indexByID = Dictionary(apps.indices.map { (apps[$0].id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The single app of an instance configured by the environment alone.
    public static func single(_ app: AppSettings = AppSettings(id: "default")) -> AppDirectory { AppDirectory([app]) }

    public subscript(id: String) -> AppSettings? { indexByID[id].map { apps[$0] } }

    /// What `body` reads from the app `id`'s settings, read where they are; nil for no such app.
    /// The subscript copies the whole settings, retaining each of their strings and sets and
    /// releasing them after: the notify and publish paths read a flag or two instead.
    public func read<T>(_ id: String, _ body: (AppSettings) -> T) -> T? {
        guard let index = indexByID[id] else { return nil }
        return body(apps[index])
    }

    /// The app a request names in `field`, or the only app when it names none.
    /// - Throws: a `Refusal` naming `field` for an unknown app, or for none when there are several.
    public func resolve(_ requested: String?, field: String = "app") throws -> AppSettings {
        if let requested {
            guard let app = self[requested] else { throw Refusal.invalid(field, "no app \(requested) on this instance") }
            return app
        }
        guard apps.count == 1 else { throw Refusal.missing(field) }
        return apps[0]
    }

    /// The app an event published with `key` goes to: the one it names in `field` (forbidden unless
    /// the key is one of that app's), or the key's own app when it names none.
    public func publisherApp(key: String, requested: String?, field: String) throws -> AppSettings {
        guard let requested else {
            guard let own = apps.first(where: { $0.isPublisherKey(key) }) else {
                throw Refusal(.unauthenticated, code: "unauthorized", message: "a publisher key is required as a bearer token")
            }
            return own
        }
        let app = try resolve(requested, field: field)
        guard app.isPublisherKey(key) else {
            throw Refusal(.forbidden, code: "forbidden", message: "this publisher key is not one of app \(app.id)'s", field: field)
        }
        return app
    }
}

/// Comparing secrets without leaking, through timing, how much of a guess was right.
public enum SecretComparison {
    /// True when `candidate` equals one of `secrets`. Every secret is compared, each in time that
    /// depends on the lengths only.
    public static func matches(_ candidate: String, anyOf secrets: some Sequence<String>) -> Bool {
        var found = false
        for secret in secrets { found = equals(candidate, secret) || found }
        return found
    }

    /// Constant-time equality of two strings' UTF-8 bytes.
    public static func equals(_ a: String, _ b: String) -> Bool {
        var (a, b) = (a, b)
        return a.withUTF8 { x in b.withUTF8 { y in equals(x, y) } }
    }

    private static func equals(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        var difference = UInt8(truncatingIfNeeded: x.count ^ y.count)
        difference |= UInt8(truncatingIfNeeded: (x.count ^ y.count) >> 8)
        for i in 0..<max(x.count, y.count) {
            difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0)
        }
        return difference == 0 && x.count == y.count
    }
}

extension AppSettings {
    /// Whether `key` is one of this app's publisher keys (compared in constant time).
    public func isPublisherKey(_ key: String) -> Bool { SecretComparison.matches(key, anyOf: publishKeys) }
}

extension AppDirectory {
    /// Refuses (forbidden, naming `field`) a request whose grant does not cover `identity`.
    public static func require(_ grant: RegistrationGrant, covers identity: String?, field: String) throws(Refusal) {
        guard grant.permits(identity) else {
            throw Refusal(.forbidden, code: "forbidden", message: "the registration token does not grant this \(field)", field: field)
        }
    }
}
