import Foundation
import HeraldCore
import HeraldDelivery
import HeraldMatrix
import HeraldPushCore
public import HeraldPushService
import HeraldServer
public import HeraldStore
import KasiaProtocol
import NIOCore

/// `herald serve`'s settings from the `HERALD_*` environment.
public struct ServeSettings: Sendable {
    var host = "127.0.0.1"
    public var port = 8080
    /// `HERALD_ADMIN_HOST`, `HERALD_ADMIN_PORT`: where `/metrics` and `/v1/stats` answer (0: a free port).
    var adminHost = "127.0.0.1"
    var adminPort = 8081
    var databasePath = "herald.sqlite"
    /// `HERALD_DATABASE_URL=postgres://…`: the PostgreSQL store instead of the SQLite file.
    var postgresURL: String?

    /// Opens the configured store for its push services' lanes, runs `body` with it (the PostgreSQL
    /// pool running alongside), and closes it.
    public func withStore<T: Sendable>(_ body: (any Store) async throws -> T) async throws -> T {
        guard let postgresURL else {
            // One server per SQLite file: a second would share the outbox with no lease between them.
            let lock = try DatabaseLock(path: databasePath)
            defer { lock.release() }
            let store = try SQLiteStore(path: databasePath, platforms: pushServices.platforms)
            try await store.migrate()
            return try await body(store)
        }
        // An API call that gets no connection within 1.5 s, or no answer 10 s after that, is
        // answered 503 store_unavailable (a batch of 1,000 events takes well under a second).
        let store = try PostgresStore(url: postgresURL, connectionWait: .milliseconds(1_500), answerDeadline: .seconds(10))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            // A database that does not answer stops the start within the connect deadline,
            // naming where it is and why, instead of waiting on the pool's retries.
            do {
                try await Self.withDeadline(.seconds(10)) { try await store.migrate() }
            } catch {
                throw HeraldConfigurationError(field: "HERALD_DATABASE_URL", message: "PostgreSQL at \(store.address) is not usable: \(String(reflecting: error))")
            }
            return try await body(store)
        }
    }

    /// `body`, or a `DeadlineExceeded` once `deadline` has passed (the body is cancelled).
    static func withDeadline(_ deadline: Duration, _ body: @escaping @Sendable () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: deadline)
                throw DeadlineExceeded(deadline: deadline)
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    struct DeadlineExceeded: Error, CustomStringConvertible {
        let deadline: Duration
        var description: String { "no answer within \(deadline.components.seconds) s" }
    }

    /// Where the data is, for logs and output: the SQLite path or the PostgreSQL host, never a password.
    public var databaseDescription: String {
        guard let postgresURL, var components = URLComponents(string: postgresURL) else { return databasePath }
        components.password = nil
        components.user = nil
        return components.string ?? "postgres"
    }
    /// From `HERALD_CONFIG`, or the single app "default" of the `HERALD_*` variables.
    public var apps: [ConfigFile.App] = []
    /// `matrix:` of `HERALD_CONFIG`, or `HERALD_MATRIX_APPS` (`app_id=type,…` for the app "default"):
    /// the Matrix push gateway's app_ids (none: no `/_matrix/push/v1/notify`).
    var matrix: [MatrixApp] = []
    /// `HERALD_REGISTRATION_RATE`/`_BURST` (per client address), `HERALD_PUBLISH_RATE`/`_BURST` (per key).
    var rateLimits = RateLimits()
    /// `HERALD_STALE_AFTER_DAYS`: devices not seen for this long are removed (default 90).
    public var staleAfterDays = 90
    /// `HERALD_RETENTION_HOURS` (`retention_hours`): finished deliveries and their events are
    /// deleted this long after the event (default 72; 0 keeps them).
    var retentionHours = 72
    /// `HERALD_OUTBOX_LEASE_SECONDS`: how long a claimed delivery stays with this process before
    /// another may take it (a crashed process's deliveries come back after it). Default 30 s,
    /// three times the APNs request deadline.
    var outboxLease: Duration = .seconds(30)
    /// `HERALD_KASPA_WRPC_URL`: a Kaspa node's wRPC JSON endpoint; starts the chain source.
    var kaspaURL: String?
    /// `HERALD_KASPA_MAX_AGE`: seconds (or `24h`, `90m`); older messages are not pushed.
    var kaspaMaximumAge: Duration = .seconds(24 * 3600)
    /// `HERALD_HTTP_IDLE_TIMEOUT_SECONDS`: a connection that sends nothing for this long is closed (default 30).
    var httpIdleTimeoutSeconds = 30
    /// `HERALD_HTTP_REQUEST_TIMEOUT_SECONDS`: a request's head and body must arrive whole within
    /// this (default 15), however the client spaces its bytes.
    var httpRequestTimeoutSeconds = 15
    /// `HERALD_EVENT_LOOPS`: the NIO event-loop threads that carry the HTTP listeners and the push
    /// services' connections (default half the cores, at least 1). Tasks run on Swift's cooperative
    /// pool, a thread per core; a loop per core as well made twice as many threads as cores wake
    /// for each request (Benchmarks/README.md, "Matrix notifies").
    var eventLoops = ServeSettings.defaultEventLoops(cores: System.coreCount)
    /// The open-file limit `herald serve` runs with: the soft limit, raised to the hard one at start.
    var openFileLimit = OpenFileLimit.current()
    /// `HERALD_MAX_CONNECTIONS`: client connections open at once (default: the open-file limit
    /// less a reserve for the store and the push services).
    var maximumConnections = 0
    /// `HERALD_MAX_DELIVERIES_PER_REQUEST`: the most deliveries one publish request may create.
    var maximumDeliveriesPerRequest = EventPublisher.defaultMaximumDeliveriesPerRequest
    /// `HERALD_FANOUT_THRESHOLD`: an event to a key with more watchers than this commits with a
    /// fan-out job, expanded a page at a time (default 500).
    var fanoutThreshold = EventPublisher.defaultFanoutThreshold
    /// `HERALD_FANOUT_PAGE`: watchers a fan-out page reads at most (default 1,000).
    var fanoutPage = FanoutExpander.defaultPageSize
    /// `HERALD_DISMISS_WINDOW_SECONDS`: at most one dismissal per device and conversation this
    /// often; read markers within it merge into the next (default 10).
    var dismissWindowSeconds: TimeInterval = ReadMarkers.defaultDismissWindow
    /// `limits:` of `HERALD_CONFIG`, else `HERALD_MAX_WATCH_KEYS`, `HERALD_MAX_ALIASES`,
    /// `HERALD_MAX_BODY_BYTES`, `HERALD_MAX_BATCH_BODY_BYTES`; unset ones keep the API's defaults.
    var limits = ConfigFile.Limits()
    /// `HERALD_CORS_ORIGINS`: web origins whose pages may call the API from a browser.
    var browserOrigins: Set<String> = []
    /// `HERALD_KASPA_NETWORK`: the network served — the chain source checks the node's, and
    /// registrations of another network's addresses are refused.
    var kaspaNetwork: (id: String, prefix: KaspaAddress.Prefix)?
    /// The push services delivered through, in order.
    public let pushServices: PushServiceRegistry
    /// Each push service with its settings read: the instance's (`HERALD_WEBPUSH_*`: where Web
    /// Push may be sent) and each app's.
    var configuredServices: [any ConfiguredPushService] = []
    /// `HERALD_SIGNING_KEY_REPLACES`: public signing keys (base64url, comma-separated) that the
    /// configured key replaces on purpose; any other recorded key stops the start.
    var signingKeyReplaces: Set<String> = []
    /// `HERALD_SHUTDOWN_GRACE_SECONDS`: how long a SIGTERM/SIGINT waits for sends in flight and
    /// their outcomes before the rest is cancelled (default 20).
    var shutdownGrace: Duration = .seconds(20)

    /// Reads `HERALD_*` from `env` and, when `HERALD_CONFIG` names one, the config file (its
    /// settings win), with `pushServices`' settings; a value Herald cannot use throws
    /// `HeraldConfigurationError` naming it.
    public init(environment env: [String: String], pushServices: PushServiceRegistry = .builtIn) throws {
        self.pushServices = pushServices
        if let refusal = KnownVariables.refusal(env, pushServices: pushServices) { throw refusal }
        let file = try env["HERALD_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }.map {
            try ConfigFile.load(path: $0, pushServices: pushServices, environment: env)
        }
        try readListenersAndStore(env, file: file)
        signingKeyReplaces = Self.list(env["HERALD_SIGNING_KEY_REPLACES"])
        try readOutboxAndChain(env)
        try readTransport(env)
        try readLimits(env, file: file)
        try readRateLimits(env)
        try readApps(env, file: file, pushServices: pushServices)
    }

    /// Where it listens, its database, and how long it keeps devices and events.
    private mutating func readListenersAndStore(_ env: [String: String], file: ConfigFile?) throws {
        if let h = file?.httpHost ?? env["HERALD_HTTP_HOST"], !h.isEmpty { host = h }
        if let p = file?.httpPort.map(String.init) ?? env["HERALD_HTTP_PORT"], !p.isEmpty {
            guard let parsed = Int(p), (0...65_535).contains(parsed) else {
                throw HeraldConfigurationError(field: "HERALD_HTTP_PORT", message: "is a port number, not \(p)")
            }
            port = parsed
        }
        if let h = file?.adminHost ?? env["HERALD_ADMIN_HOST"], !h.isEmpty { adminHost = h }
        if let p = file?.adminPort.map(String.init) ?? env["HERALD_ADMIN_PORT"], !p.isEmpty {
            guard let parsed = Int(p), (0...65_535).contains(parsed) else {
                throw HeraldConfigurationError(field: "HERALD_ADMIN_PORT", message: "is a port number, not \(p)")
            }
            adminPort = parsed
        }
        if adminPort != 0, adminPort == port {
            throw HeraldConfigurationError(field: "HERALD_ADMIN_PORT", message: "is the API's port \(port) (HERALD_HTTP_PORT); the admin listener needs one of its own")
        }
        if let url = file?.databaseURL ?? env["HERALD_DATABASE_URL"], !url.isEmpty {
            if url.hasPrefix("sqlite:") {
                databasePath = String(url.dropFirst("sqlite:".count))
                guard !databasePath.isEmpty else { throw HeraldConfigurationError(field: "HERALD_DATABASE_URL", message: "sqlite: needs a path") }
            } else if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
                do {
                    _ = try PostgresStore(url: url)
                } catch {
                    throw HeraldConfigurationError(field: "HERALD_DATABASE_URL", message: "\(error) (postgres://user:password@host:port/database?sslmode=…)")
                }
                postgresURL = url
            } else {
                throw HeraldConfigurationError(field: "HERALD_DATABASE_URL", message: "is sqlite:<path> or postgres://…")
            }
        }
        if let days = file?.staleAfterDays.map(String.init) ?? env["HERALD_STALE_AFTER_DAYS"], !days.isEmpty {
            // Bounded: days become seconds and dates, which a number past the range would overflow.
            guard let parsed = Int(days), (1...36_500).contains(parsed) else {
                throw HeraldConfigurationError(field: "HERALD_STALE_AFTER_DAYS", message: "is a whole number of days from 1 to 36500")
            }
            staleAfterDays = parsed
        }
        if let hours = file?.retentionHours {
            retentionHours = hours
        } else if let hours = try Self.integer(env, "HERALD_RETENTION_HOURS", in: 0...87_600, "is a whole number of hours from 0 (keep everything) to 87600") {
            retentionHours = hours
        }
    }

    /// The outbox lease and the Kaspa network.
    private mutating func readOutboxAndChain(_ env: [String: String]) throws {
        if let lease = env["HERALD_OUTBOX_LEASE_SECONDS"], !lease.isEmpty {
            // A lease shorter than a send's deadline would let another worker take a push still in flight.
            guard let parsed = Int(lease), (Self.minimumLeaseSeconds...86_400).contains(parsed) else {
                throw HeraldConfigurationError(
                    field: "HERALD_OUTBOX_LEASE_SECONDS",
                    message: "is a whole number of seconds from \(Self.minimumLeaseSeconds) (a push's APNs deadline is 10 s) to 86400")
            }
            outboxLease = .seconds(parsed)
        }
        if let text = env["HERALD_KASPA_NETWORK"], !text.isEmpty {
            let prefix: KaspaAddress.Prefix? = switch text {
            case "mainnet": .mainnet
            case "testnet": .testnet
            case "simnet": .simnet
            case "devnet": .devnet
            case _ where text.hasPrefix("testnet-") && Int(text.dropFirst("testnet-".count)) != nil: .testnet
            default: nil
            }
            guard let prefix else {
                throw HeraldConfigurationError(field: "HERALD_KASPA_NETWORK", message: "is mainnet, testnet (any testnet), testnet-<n> (testnet-10), simnet or devnet, not \(text)")
            }
            kaspaNetwork = (text, prefix)
        }
    }

    /// HTTP deadlines, connection and delivery caps.
    private mutating func readTransport(_ env: [String: String]) throws {
        if let value = try Self.integer(env, "HERALD_HTTP_IDLE_TIMEOUT_SECONDS", in: 1...3_600, "is a whole number of seconds from 1 to 3600") { httpIdleTimeoutSeconds = value }
        if let value = try Self.integer(env, "HERALD_HTTP_REQUEST_TIMEOUT_SECONDS", in: 1...600, "is a whole number of seconds from 1 to 600") {
            httpRequestTimeoutSeconds = value
        }
        if let value = try Self.integer(env, "HERALD_EVENT_LOOPS", in: 1...1_024, "is a whole number of threads from 1 to 1024") { eventLoops = value }
        // Client connections never take the descriptors the store and the push services need.
        let connectionCeiling = ConnectionLimits.ceiling(openFileLimit: openFileLimit)
        maximumConnections = ConnectionLimits.defaultMaximum(openFileLimit: openFileLimit)
        if let value = try Self.integer(
            env, "HERALD_MAX_CONNECTIONS", in: 1...connectionCeiling,
            "is a whole number from 1 to \(connectionCeiling) (the open-file limit \(openFileLimit) less \(openFileLimit - connectionCeiling) kept for the store and the push services)")
        {
            maximumConnections = value
        }
        if let value = try Self.integer(env, "HERALD_MAX_DELIVERIES_PER_REQUEST", in: 1...10_000_000, "is a whole number from 1 to 10000000") { maximumDeliveriesPerRequest = value }
        if let value = try Self.integer(env, "HERALD_FANOUT_THRESHOLD", in: 0...100_000, "is a whole number from 0 to 100000") { fanoutThreshold = value }
        if let value = try Self.integer(env, "HERALD_FANOUT_PAGE", in: 10...50_000, "is a whole number from 10 to 50000") { fanoutPage = value }
        if let value = try Self.integer(env, "HERALD_DISMISS_WINDOW_SECONDS", in: 0...3_600, "is a whole number of seconds from 0 to 3600") {
            dismissWindowSeconds = TimeInterval(value)
        }
    }

    /// Request limits and the chain source.
    private mutating func readLimits(_ env: [String: String], file: ConfigFile?) throws {
        typealias L = ConfigFile.Limits
        func limit(_ name: String, _ range: ClosedRange<Int>) throws -> Int? {
            try Self.integer(env, name, in: range, "is a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        limits.watchKeys = try file?.limits.watchKeys ?? limit("HERALD_MAX_WATCH_KEYS", L.watchKeysRange)
        limits.aliases = try file?.limits.aliases ?? limit("HERALD_MAX_ALIASES", L.aliasesRange)
        limits.bodyBytes = try file?.limits.bodyBytes ?? limit("HERALD_MAX_BODY_BYTES", L.bodyRange)
        limits.batchBodyBytes = try file?.limits.batchBodyBytes ?? limit("HERALD_MAX_BATCH_BODY_BYTES", L.batchBodyRange)
        if let value = try Self.integer(env, "HERALD_SHUTDOWN_GRACE_SECONDS", in: 1...3_600, "is a whole number of seconds from 1 to 3600") { shutdownGrace = .seconds(value) }
        if let url = env["HERALD_KASPA_WRPC_URL"], !url.isEmpty {
            guard url.hasPrefix("ws://") || url.hasPrefix("wss://"), URL(string: url)?.host != nil else {
                throw HeraldConfigurationError(field: "HERALD_KASPA_WRPC_URL", message: "is ws://host:port (a node's wRPC JSON endpoint, e.g. ws://127.0.0.1:18110)")
            }
            kaspaURL = url
        }
        if let text = env["HERALD_KASPA_MAX_AGE"], !text.isEmpty {
            let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
            let unit = text.last.flatMap { units[$0] }
            // At most a year: the product is checked before it becomes a duration.
            guard let value = Int64(unit == nil ? text : String(text.dropLast())), value > 0,
                case let (seconds, overflow) = value.multipliedReportingOverflow(by: unit ?? 1), !overflow, seconds <= 366 * 86_400
            else {
                throw HeraldConfigurationError(
                    field: "HERALD_KASPA_MAX_AGE", message: "is a duration up to a year: seconds, or a number with s, m, h or d (24h)")
            }
            kaspaMaximumAge = .seconds(seconds)
        }
    }

    /// Rate limits, trusted proxies, browser origins and Matrix clients.
    private mutating func readRateLimits(_ env: [String: String]) throws {
        func number(_ name: String, _ current: Double) throws -> Double {
            guard let text = env[name], !text.isEmpty else { return current }
            guard let value = Double(text), value >= 0, value.isFinite else {
                throw HeraldConfigurationError(field: name, message: "is a number, 0 or more (a rate of 0 turns the limit off)")
            }
            return value
        }
        rateLimits.registration = .init(
            rate: try number("HERALD_REGISTRATION_RATE", rateLimits.registration.rate),
            burst: max(1, try number("HERALD_REGISTRATION_BURST", rateLimits.registration.burst)))
        rateLimits.publishing = .init(
            rate: try number("HERALD_PUBLISH_RATE", rateLimits.publishing.rate),
            burst: max(1, try number("HERALD_PUBLISH_BURST", rateLimits.publishing.burst)))
        func networks(_ name: String) throws -> [IPNetwork] {
            guard let text = env[name], !text.isEmpty else { return [] }
            return try text.split(separator: ",").map { entry in
                let cidr = entry.trimmingCharacters(in: .whitespaces)
                guard let network = IPNetwork(cidr) else {
                    throw HeraldConfigurationError(field: name, message: "is a comma-separated list of CIDRs (10.0.0.0/8, ::1/128), not \(cidr)")
                }
                return network
            }
        }
        rateLimits.trustedProxies = try networks("HERALD_TRUSTED_PROXIES")
        for entry in Self.list(env["HERALD_CORS_ORIGINS"]) {
            guard let origin = BrowserOrigins.origin(entry) else {
                throw HeraldConfigurationError(
                    field: "HERALD_CORS_ORIGINS",
                    message: "is a comma-separated list of web origins (https://app.example.com, http://localhost:8000), not \(entry)")
            }
            browserOrigins.insert(origin)
        }
        rateLimits.matrixClients = try networks("HERALD_MATRIX_ALLOWED_CLIENTS")
        if let text = env["HERALD_TRUSTED_PROXY_HEADER"], !text.isEmpty {
            guard let header = ProxyHeader(rawValue: text.lowercased()) else {
                throw HeraldConfigurationError(field: "HERALD_TRUSTED_PROXY_HEADER", message: "is x-forwarded-for or forwarded (the header your proxy writes), not \(text)")
            }
            rateLimits.proxyHeader = header
        }
        rateLimits.matrix = .init(
            rate: try number("HERALD_MATRIX_RATE", rateLimits.matrix.rate),
            burst: max(1, try number("HERALD_MATRIX_BURST", rateLimits.matrix.burst)))
    }

    /// The apps: the config file's, or the single app "default" of the `HERALD_*` variables.
    private mutating func readApps(_ env: [String: String], file: ConfigFile?, pushServices: PushServiceRegistry) throws {
        if let file {
            apps = file.apps
            configuredServices = file.services
            matrix = file.matrix
        } else {
            matrix = try Self.matrixApps(env["HERALD_MATRIX_APPS"] ?? "", pushers: pushServices.matrixPushers)
            let registrationKeys = try Self.keys(env, "HERALD_REGISTRATION_KEYS")
            var registration: RegistrationPolicy = registrationKeys.isEmpty ? .open : .bearer(registrationKeys)
            let secret = env["HERALD_REGISTRATION_JWT_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
            let publicKey = env["HERALD_REGISTRATION_JWT_PUBLIC_KEY"].flatMap { $0.isEmpty ? nil : $0 }
            if secret != nil || publicKey != nil {
                guard registrationKeys.isEmpty else {
                    throw HeraldConfigurationError(field: "HERALD_REGISTRATION_KEYS", message: "is for the bearer policy; the JWT variables choose the signed one")
                }
                registration = .signed(try RegistrationSigning.keys(
                    secret: secret, publicKeyPath: publicKey, secretField: "HERALD_REGISTRATION_JWT_SECRET",
                    publicKeyField: "HERALD_REGISTRATION_JWT_PUBLIC_KEY", policyField: "HERALD_REGISTRATION_JWT_SECRET",
                    error: { HeraldConfigurationError(field: $0, message: $1) }))
            }
            if let policy = env["HERALD_REGISTRATION_POLICY"], !policy.isEmpty {
                // Named outright; bearer and signed take their keys from their own variables.
                switch (policy, registration) {
                case ("open", .open), ("bearer", .bearer), ("signed", .signed): break
                case ("wallet", .open): registration = .wallet
                default:
                    throw HeraldConfigurationError(
                        field: "HERALD_REGISTRATION_POLICY",
                        message: "is open, bearer (with HERALD_REGISTRATION_KEYS), signed (with HERALD_REGISTRATION_JWT_*) or wallet (with neither), not \(policy) here")
                }
            }
            var settings = AppSettings(
                id: "default", publishKeys: try Self.keys(env, "HERALD_PUBLISH_KEYS"), registration: registration)
            settings.maximumDevices = try Self.integer(env, "HERALD_MAX_DEVICES", in: 1...100_000_000, "is a whole number from 1 to 100000000")
            if let text = env["HERALD_PRIVACY"], !text.isEmpty {
                guard let privacy = PushPrivacy(rawValue: text) else { throw HeraldConfigurationError(field: "HERALD_PRIVACY", message: "is standard or minimal") }
                settings.privacy = privacy
            }
            settings.sealing = try SealingSettings.read({ env[$0].flatMap { $0.isEmpty ? nil : $0 } }, field: { $0 })
            // GhostTalk's testing-only /apns/send.
            settings.ghostTalkSendEnabled = ["1", "true", "yes"].contains(env["HERALD_GHOSTTALK_SEND_ENABLED"]?.lowercased() ?? "")
            settings.allowsCriticalAlerts = ["1", "true", "yes"].contains(env["HERALD_CRITICAL_ALERTS"]?.lowercased() ?? "")
            settings.matrixReachesRegisteredDevices = ["1", "true", "yes"].contains(env["HERALD_MATRIX_REACHES_REGISTERED_DEVICES"]?.lowercased() ?? "")
            var read = [settings]
            configuredServices = try pushServices.configure(apps: &read, environment: env, source: .environment) { _, _ in env }
            apps = read.map(ConfigFile.App.init(settings:))
        }
    }

    /// The APNs request deadline (10 s) and a margin for the store.
    static let minimumLeaseSeconds = 15

    /// `HERALD_MATRIX_APPS`: `app_id=type` pairs (type apns, fcm or webpush), comma-separated, in
    /// order, for the app "default" with Sygnal's defaults (the config file's `matrix:` has the rest).
    static func matrixApps(_ text: String, pushers: [any MatrixPusher]) throws -> [MatrixApp] {
        try text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map { entry in
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, let pusher = pushers.first(where: { $0.kind.rawValue == parts[1] }) else {
                throw HeraldConfigurationError(field: "HERALD_MATRIX_APPS", message: "is app_id=type pairs (type \(MatrixApp.Kind.names(pushers))), not \(entry)")
            }
            return MatrixApp(pattern: parts[0], app: "default", kind: pusher.kind)
        }
    }

    /// A comma-separated list of bearer keys, each at least 16 characters.
    static func keys(_ env: [String: String], _ name: String) throws -> Set<String> {
        let keys = list(env[name])
        if keys.contains(where: { $0.count < ConfigFile.minimumKeyLength }) {
            throw HeraldConfigurationError(field: name, message: "each key is at least \(ConfigFile.minimumKeyLength) characters")
        }
        return keys
    }

    /// Half the cores, at least one: the loops share the cores with the cooperative pool.
    static func defaultEventLoops(cores: Int) -> Int { max(1, cores / 2) }

    /// A whole number from `range`, when the variable is set; else exit 2 with `message`.
    private static func integer(_ env: [String: String], _ name: String, in range: ClosedRange<Int>, _ message: String) throws -> Int? {
        guard let text = env[name], !text.isEmpty else { return nil }
        guard let value = Int(text), range.contains(value) else { throw HeraldConfigurationError(field: name, message: message) }
        return value
    }

    static func list(_ value: String?) -> Set<String> {
        Set((value ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
    }
}

