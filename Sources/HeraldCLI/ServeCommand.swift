import ArgumentParser
import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldAPNsSimulator
import HeraldCore
import HeraldDelivery
import HeraldFCM
import HeraldFCMSimulator
import HeraldKaspa
import HeraldMatrix
import HeraldPushCore
import HeraldServer
import HeraldStore
import HeraldWebPush
import HeraldWebPushCore
import HeraldWebPushSimulator
import Hummingbird
import KasiaProtocol
import Logging
import Metrics
import NIOCore
import NIOPosix
import ServiceLifecycle

/// `herald serve`: the gateway, configured by the `HERALD_*` environment (or `HERALD_CONFIG`).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the gateway (HERALD_* environment; with no APNs credentials, the built-in APNs simulator).")

    func run() async throws {
        CLILogging.bootstrap()
        let logger = Logger(label: "herald")
        // Descriptors are what slow clients and many push-service origins exhaust first.
        OpenFileLimit.raiseToHardLimit()
        let settings = try ServeSettings.load()

        try await settings.withStore { store in try await serve(store: store, settings: settings, logger: logger) }
    }

    private func serve(store: any Store, settings: ServeSettings, logger: Logger) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        var services: [any Service] = []

        // Apps without Apple credentials share one in-process simulator, each with its own ephemeral key.
        let simulated = settings.apps.filter { $0.apns == nil }
        var simulator: APNsSimulator?
        var simulatorKeys: [String: APNsSigningKey] = [:]
        if !simulated.isEmpty {
            for (i, app) in simulated.enumerated() {
                simulatorKeys[app.settings.id] = APNsSigningKey(
                    privateKey: P256.Signing.PrivateKey(), keyID: String(format: "HERALDSIM%d", i), teamID: "HERALDSIM0")
            }
            var configuration = APNsSimulatorConfiguration()
            configuration.port = 0
            // Its control API answers on the admin listener, under /simulators/apns.
            configuration.controlPort = nil
            configuration.keys = simulatorKeys.values.map { SimulatorKey(keyID: $0.keyID, teamID: $0.teamID, publicKey: $0.publicKey) }
            let sim = try await APNsSimulator.start(configuration: configuration, eventLoopGroup: group)
            simulator = sim
            // First in the group, so it stops last: pushes in flight at shutdown still reach it.
            services.append(StopAtShutdown { await sim.shutdown() })
            logger.warning(
                "No APNs credentials (HERALD_APNS_*): pushes go to the built-in APNs SIMULATOR, not to Apple",
                metadata: [
                    "apps": "\(simulated.map(\.settings.id).joined(separator: ","))", "simulator": "\(sim.url)",
                    "control": "/simulators/apns on the admin listener",
                ])
        }

        // Apps without FCM credentials share one in-process FCM simulator and its service account.
        var fcmSimulator: FCMSimulator?
        let fcmSimulated = settings.apps.filter { $0.fcm == nil }
        if !fcmSimulated.isEmpty {
            var configuration = FCMSimulator.Configuration()
            configuration.controlPort = nil
            let sim = try await FCMSimulator.start(configuration: configuration)
            fcmSimulator = sim
            services.append(StopAtShutdown { await sim.shutdown() })
            logger.warning(
                "No FCM credentials (HERALD_FCM_*): Android pushes go to the built-in FCM SIMULATOR, not to Google",
                metadata: [
                    "apps": "\(fcmSimulated.map(\.settings.id).joined(separator: ","))", "simulator": "\(sim.url)",
                    "control": "/simulators/fcm on the admin listener",
                ])
        }

        // Apps without a VAPID key sign with an ephemeral one and get a built-in Web Push simulator;
        // its own address is the one inside address Herald sends to without being told.
        var webPushSimulator: WebPushSimulator?
        var webPushAllowHosts = settings.webPush.allowHosts
        let unsigned = settings.apps.filter { $0.vapid == nil }
        if !unsigned.isEmpty {
            var configuration = WebPushSimulator.Configuration()
            configuration.controlPort = nil
            let sim = try await WebPushSimulator.start(configuration: configuration)
            webPushAllowHosts.insert("\(configuration.host):\(sim.port)")
            webPushSimulator = sim
            services.append(StopAtShutdown { await sim.shutdown() })
            logger.warning(
                "No VAPID key (HERALD_VAPID_*): these apps sign Web Push with an EPHEMERAL key, so browser subscriptions made with it end when Herald restarts; a built-in Web Push simulator is running",
                metadata: [
                    "apps": "\(unsigned.map(\.settings.id).joined(separator: ","))", "simulator": "\(sim.origin)",
                    "control": "/simulators/webpush on the admin listener",
                ])
        }
        let webPushGuard = WebPushEndpointGuard(policy: WebPushAddressPolicy(allowedHosts: webPushAllowHosts))
        var webPushConfiguration = WebPushClientConfiguration(endpointGuard: webPushGuard)
        webPushConfiguration.trustRootsPEMFiles = settings.webPush.caFile.map { [$0] } ?? []
        // The built-in simulators' CAs are trusted from memory: nothing is written to the temporary directory.
        webPushConfiguration.trustRootsPEM = webPushSimulator.map { [$0.tls.caPEM] } ?? []
        let webPushClient = try WebPushClient(configuration: webPushConfiguration, eventLoopGroup: group, logger: Logger(label: "herald.webpush"))
        var vapidPublicKeys: [String: String] = [:]

        // Per app: an APNs provider (a client per APNs environment, opened on first use), an FCM
        // provider and a Web Push provider (one client for every app: connections are per push service).
        var providers: [(app: String, providers: [any PushProvider])] = []
        for app in settings.apps {
            let provider: APNsPushProvider
            if let apns = app.apns {
                // The store is the ledger: every instance on this database sends the same JWT per key.
                let apnsLogger = Logger(label: "herald.apns")
                let tokens = APNsProviderTokenSource(
                    key: try apns.loadSigningKey(), ledger: store,
                    onLedgerError: { apnsLogger.warning("shared provider token unavailable, using a local one", metadata: ["error": "\($0)"]) })
                provider = APNsPushProvider(topic: apns.topic) { environment in
                    try APNsClient(
                        configuration: apns.clientConfiguration(environment: environment), tokens: tokens, eventLoopGroup: group,
                        logger: apnsLogger)
                }
            } else {
                // The simulator's two hosts, as Apple's: a client per environment, opened on first use.
                let sim = simulator!
                let tokens = APNsProviderTokenSource(key: simulatorKeys[app.settings.id]!)
                provider = APNsPushProvider(topic: app.simulatorTopic) { environment in
                    var configuration = APNsClientConfiguration(environment: environment, url: sim.url(for: environment))
                    configuration.trustRootsPEM = [sim.tls.caPEM]
                    return try APNsClient(configuration: configuration, tokens: tokens, eventLoopGroup: group, logger: Logger(label: "herald.apns"))
                }
            }
            let fcmClient: FCMClient
            if let fcm = app.fcm {
                // The store is the ledger: every instance on this database uses one access token per account.
                fcmClient = try FCMClient(
                    configuration: fcm.clientConfiguration, account: fcm.account, projectID: fcm.projectID, eventLoopGroup: group,
                    ledger: store, logger: Logger(label: "herald.fcm"))
            } else {
                let sim = fcmSimulator!
                var configuration = FCMClientConfiguration(url: sim.url)
                configuration.trustRootsPEM = [sim.tls.caPEM]
                fcmClient = try FCMClient(
                    configuration: configuration,
                    account: try FCMServiceAccount(json: sim.serviceAccountJSON), eventLoopGroup: group, logger: Logger(label: "herald.fcm"))
            }
            let vapid = try app.vapid ?? VAPIDSettings(key: VAPIDKey(privateKey: .init()), subject: VAPIDSubject(VAPIDSettings.developmentSubject))
            vapidPublicKeys[app.settings.id] = vapid.key.applicationServerKey
            let webPush = WebPushProvider(client: webPushClient, signer: VAPIDSigner(key: vapid.key, subject: vapid.subject))
            providers.append((app.settings.id, [provider, FCMPushProvider(client: fcmClient), webPush]))
        }

        let metrics = HeraldMetrics.prometheus()
        // Hummingbird's request metrics go through the global system: the same registry.
        MetricsSystem.bootstrap(metrics.0.factory)
        // Read at every scrape: each app's queue, the push services' connections and token refreshes.
        let appIDs = settings.apps.map(\.settings.id)
        let readings = providers
        metrics.0.addCollector { m in
            if let queues = try? await store.queues() {
                let now = Date()
                for app in appIDs {
                    let queue = queues[app]
                    m.queue(app: app, depth: queue?.depth ?? 0, oldestPendingSeconds: queue?.oldest.map { max(0, now.timeIntervalSince($0)) } ?? 0)
                }
            }
            var open: [Platform: Int] = [:]
            for (app, list) in readings {
                for provider in list {
                    let stats = provider.stats
                    m.tokenRefreshes(app: app, platform: provider.platform, stats: stats)
                    // Every app's Web Push provider shares one client: its connections are counted once, below.
                    if provider.platform != .web { open[provider.platform, default: 0] += stats.connectionsOpen }
                }
            }
            open[.web] = webPushClient.connectionsOpen
            for (platform, count) in open { m.connectionsOpen(platform: platform, count) }
        }
        var outboxSettings = OutboxSettings()
        outboxSettings.lease = settings.outboxLease
        let outbox = Outbox(
            queue: store, providers: providers, settings: outboxSettings, logger: Logger(label: "herald.outbox"), metrics: metrics.0)
        // Stops after the lanes and before the simulators: the providers' connections close
        // first, so a simulator's graceful stop has none left to wait for.
        let allProviders = providers.flatMap(\.providers)
        services.append(StopAtShutdown {
            for provider in allProviders { await provider.shutdown() }
        })
        services += outbox.services
        var api = APIConfiguration()
        api.apps = AppDirectory(settings.apps.map(\.settings))
        api.rateLimits = settings.rateLimits
        api.kaspaNetwork = settings.kaspaNetwork?.prefix
        api.webPushGuard = webPushGuard
        api.vapidPublicKeys = vapidPublicKeys
        api.browserOrigins = BrowserOrigins(settings.browserOrigins)
        if let value = settings.limits.watchKeys { api.maximumWatchKeys = value }
        if let value = settings.limits.aliases { api.maximumAliases = value }
        if let value = settings.limits.bodyBytes { api.maximumBodySize = value }
        if let value = settings.limits.batchBodyBytes { api.maximumBatchBodySize = value }
        let publisher = EventPublisher(
            store: store, apps: api.apps, outbox: outbox, metrics: metrics.0, platforms: [.ios, .android, .web],
            maximumDeliveriesPerRequest: settings.maximumDeliveriesPerRequest)

        let cleanup = StaleDeviceCleanup(store: store, staleAfterDays: settings.staleAfterDays)
        let removed = try await cleanup.once()
        logger.info("stale devices removed", metadata: ["removed": "\(removed)", "stale_after_days": "\(settings.staleAfterDays)"])
        services.append(cleanup)
        // Always: with a retention of 0 its passes keep every event and only fold the store's counters.
        services.append(RetentionPruner(store: store, retention: settings.retentionHours > 0 ? .seconds(settings.retentionHours * 3600) : nil))

        // The Kaspa chain source, when a node is configured: its events take the publish path.
        let chainSource = settings.kaspaURL.map { url in
            var configuration = KaspaChainSource.Configuration(url: url)
            configuration.maximumAge = settings.kaspaMaximumAge
            configuration.network = settings.kaspaNetwork?.id
            return KaspaChainSource(configuration: configuration, store: store, sink: publisher, logger: Logger(label: "herald.kaspa"))
        }
        // /v1/stats, /readyz and /metrics read its state when asked.
        var sources: [SourceReport] = []
        if let chainSource {
            services.append(chainSource)
            sources.append(SourceReport(name: "kaspa", stats: { chainSource.stats.statsFields }, readiness: { chainSource.stats.readinessFields }))
            metrics.0.addCollector { $0.kaspaSource(chainSource.stats) }
        }

        // /readyz: the built-in simulators still accept connections; each app's way of sending.
        var readiness: [ReadinessCheck] = []
        if let simulator { readiness.append(ReadinessCheck("built-in APNs simulator listening") { simulator.isListening }) }
        if let fcmSimulator { readiness.append(ReadinessCheck("built-in FCM simulator listening") { fcmSimulator.isListening }) }
        if let webPushSimulator { readiness.append(ReadinessCheck("built-in Web Push simulator listening") { webPushSimulator.isListening }) }
        var sending: [String: [String: String]] = [:]
        for app in settings.apps {
            sending[app.settings.id] = [
                "ios": app.apns == nil ? "simulator" : "credentials", "android": app.fcm == nil ? "simulator" : "credentials",
                "web": app.vapid == nil ? "simulator (ephemeral VAPID key)" : "credentials",
            ]
        }
        let router = Gateway.router(
            store: store, configuration: api, publisher: publisher, metrics: metrics, sources: sources, readiness: readiness,
            sending: sending, matrix: MatrixApps(settings.matrix), lanes: outbox.lanes, operations: false)
        // `/metrics` and `/v1/stats` on a listener of their own, loopback by default: what the
        // instance counts is for its operator, not for whoever reaches the API.
        // The built-in simulators' control APIs, for the operator beside /metrics (SPEC §12).
        var simulatorControls: [String: SimulatorControlRoute] = [:]
        if let simulator { simulatorControls["apns"] = Self.route(simulator.control) }
        if let fcmSimulator { simulatorControls["fcm"] = Self.route(fcmSimulator.control) }
        if let webPushSimulator { simulatorControls["webpush"] = Self.route(webPushSimulator.control) }
        let readinessLine = ReadinessLine(host: settings.host, adminHost: settings.adminHost, simulators: Set(simulatorControls.keys))
        let admin = Application(
            router: Gateway.operationsRouter(
                store: store, metrics: metrics, sources: sources, readiness: readiness, sending: sending, lanes: outbox.lanes,
                simulators: simulatorControls),
            server: .http1(configuration: .init(idleTimeout: .seconds(Int64(settings.httpIdleTimeoutSeconds)))),
            configuration: .init(address: .hostname(settings.adminHost, port: settings.adminPort), serverName: "Herald"),
            onServerRunning: { channel in await readinessLine.admin(channel.localAddress?.port ?? 0) },
            eventLoopGroupProvider: .shared(group), logger: logger)
        services.append(PortNamingService(admin, field: "HERALD_ADMIN_PORT", port: settings.adminPort))
        // Every client connection is counted and held to its deadlines; past the cap, the longest
        // waiting one without a request in hand makes room (ConnectionTable).
        let connections = ConnectionTable(limits: ConnectionLimits(
            maximumConnections: settings.maximumConnections, requestTimeout: .seconds(Int64(settings.httpRequestTimeoutSeconds)),
            idleTimeout: .seconds(Int64(settings.httpIdleTimeoutSeconds))))
        let app = Application(
            router: router,
            // A connection that sends nothing for this long is closed: idle clients cannot hold the server's connections.
            server: .http1(configuration: .init(
                additionalChannelHandlers: [connections.handler()], idleTimeout: .seconds(Int64(settings.httpIdleTimeoutSeconds)))),
            configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "Herald"),
            onServerRunning: { channel in
                // One line on standard output once both listeners listen, for scripts and tests.
                await readinessLine.api(channel.localAddress?.port ?? 0)
            },
            eventLoopGroupProvider: .shared(group), logger: logger)
        // Last in the group, so it stops first: no new requests while the rest winds down.
        services.append(app)
        // A misspelled variable or a config file without keys must not pass for a working setup.
        for app in settings.apps where app.settings.publishKeys.isEmpty {
            logger.warning(
                "publishing is off for this app: it has no publisher key (HERALD_PUBLISH_KEYS, or publish_keys in HERALD_CONFIG); POST /v1/events answers 401",
                metadata: ["app": "\(app.settings.id)"])
        }
        for app in settings.apps where app.settings.registration == .open {
            logger.warning(
                "registration is open: anyone who reaches Herald can register any device token for this app, watching any key and any Kaspa address, and unregister tokens they know; put a registration key or a trusted network in front",
                metadata: ["app": "\(app.settings.id)"])
        }
        logger.info("herald serve", metadata: [
            "http": "\(settings.host):\(settings.port)", "admin": "\(settings.adminHost):\(settings.adminPort)", "database": "\(settings.databaseDescription)",
            "open_file_limit": "\(settings.openFileLimit)", "max_connections": "\(settings.maximumConnections)",
            "apps": "\(settings.apps.map(\.settings.id).joined(separator: ","))",
        ])

        // On SIGTERM/SIGINT the services stop in reverse order: the HTTP server stops accepting,
        // the chain source and the cleanup stop, each lane stops claiming and records the outcomes
        // of what it has in flight, then the simulator closes. Past the grace period they are cancelled.
        var configuration = ServiceGroupConfiguration(
            services: services.map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        configuration.maximumGracefulShutdownDuration = settings.shutdownGrace
        configuration.maximumCancellationDuration = .seconds(5)
        // A service that fails (the port is taken) fails the command, once everything is closed.
        var failure: (any Error)?
        do {
            try await ServiceGroup(configuration: configuration).run()
        } catch {
            failure = error
        }
        try await group.shutdownGracefully()
        if let failure { throw PortInUse.named(failure, "HERALD_HTTP_PORT", port: settings.port) }
    }

    /// A simulator's control API as the admin listener mounts it.
    static func route(_ control: @escaping @Sendable (SimulatorControlCall) async -> SimulatorControlAnswer) -> SimulatorControlRoute {
        { method, path, query, body in
            let answer = await control(SimulatorControlCall(method: method, path: path, query: query, body: body))
            return (answer.status, answer.json)
        }
    }
}

/// A built-in simulator as a service: it runs until the group stops it, then `stop` closes it.
struct StopAtShutdown: Service {
    let stop: @Sendable () async -> Void

    func run() async throws {
        try? await gracefulShutdown()
        await stop()
    }
}

/// A service whose bind failure names the variable that chose its port.
struct PortNamingService: Service {
    let service: any Service
    let field: String
    let port: Int

    init(_ service: any Service, field: String, port: Int) {
        (self.service, self.field, self.port) = (service, field, port)
    }

    func run() async throws {
        do { try await service.run() } catch { throw PortInUse.named(error, field, port: port) }
    }
}

/// `{"ready":true,"http":"127.0.0.1:8080","admin":"127.0.0.1:8081","simulator_control":"http://127.0.0.1:8081/simulators/apns",…}`
/// on standard output once the API and the admin listener both listen.
actor ReadinessLine {
    private let host: String
    private let adminHost: String
    /// The built-in simulators whose control API the admin listener carries.
    private let simulators: Set<String>
    private var line: [String: Any]?
    private var adminPort: Int?

    init(host: String, adminHost: String, simulators: Set<String>) {
        (self.host, self.adminHost, self.simulators) = (host, adminHost, simulators)
    }

    func api(_ port: Int) {
        line = ["ready": true, "http": "\(host):\(port)"]
        printWhenBoth()
    }

    func admin(_ port: Int) {
        adminPort = port
        printWhenBoth()
    }

    private func printWhenBoth() {
        guard var line, let adminPort else { return }
        line["admin"] = "\(adminHost):\(adminPort)"
        let admin = adminHost.contains(":") ? "[\(adminHost)]:\(adminPort)" : "\(adminHost):\(adminPort)"
        for (field, name) in [("simulator_control", "apns"), ("fcm_simulator_control", "fcm"), ("webpush_simulator_control", "webpush")] {
            line[field] = simulators.contains(name) ? "http://\(admin)/simulators/\(name)" : NSNull()
        }
        guard let data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}

/// `herald serve`'s settings from the `HERALD_*` environment.
struct ServeSettings {
    var host = "127.0.0.1"
    var port = 8080
    /// `HERALD_ADMIN_HOST`, `HERALD_ADMIN_PORT`: where `/metrics` and `/v1/stats` answer (0: a free port).
    var adminHost = "127.0.0.1"
    var adminPort = 8081
    var databasePath = "herald.sqlite"
    /// `HERALD_DATABASE_URL=postgres://…`: the PostgreSQL store instead of the SQLite file.
    var postgresURL: String?

    /// Opens the configured store, runs `body` with it (the PostgreSQL pool running alongside), and closes it.
    func withStore<T: Sendable>(_ body: (any Store) async throws -> T) async throws -> T {
        guard let postgresURL else {
            // One server per SQLite file: a second would share the outbox with no lease between them.
            let lock = try DatabaseLock(path: databasePath)
            defer { lock.release() }
            let store = try SQLiteStore(path: databasePath)
            try await store.migrate()
            return try await body(store)
        }
        // An API call that gets no connection within 1.5 s is answered 503 store_unavailable.
        let store = try PostgresStore(url: postgresURL, connectionWait: .milliseconds(1_500))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            // A database that does not answer stops the start within the connect deadline,
            // naming where it is and why, instead of waiting on the pool's retries.
            do {
                try await Self.withDeadline(.seconds(10)) { try await store.migrate() }
            } catch {
                throw CLIOutput.invalid(field: "HERALD_DATABASE_URL", message: "PostgreSQL at \(store.address) is not usable: \(String(reflecting: error))")
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
    var databaseDescription: String {
        guard let postgresURL, var components = URLComponents(string: postgresURL) else { return databasePath }
        components.password = nil
        components.user = nil
        return components.string ?? "postgres"
    }
    /// From `HERALD_CONFIG`, or the single app "default" of the `HERALD_*` variables.
    var apps: [ConfigFile.App] = []
    /// `matrix:` of `HERALD_CONFIG`, or `HERALD_MATRIX_APPS` (`app_id=type,…` for the app "default"):
    /// the Matrix push gateway's app_ids (none: no `/_matrix/push/v1/notify`).
    var matrix: [MatrixApp] = []
    /// `HERALD_REGISTRATION_RATE`/`_BURST` (per client address), `HERALD_PUBLISH_RATE`/`_BURST` (per key).
    var rateLimits = RateLimits()
    /// `HERALD_STALE_AFTER_DAYS`: devices not seen for this long are removed (default 90).
    var staleAfterDays = 90
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
    /// The open-file limit `herald serve` runs with: the soft limit, raised to the hard one at start.
    var openFileLimit = OpenFileLimit.current()
    /// `HERALD_MAX_CONNECTIONS`: client connections open at once (default: the open-file limit
    /// less a reserve for the store and the push services).
    var maximumConnections = 0
    /// `HERALD_MAX_DELIVERIES_PER_REQUEST`: the most deliveries one publish request may create.
    var maximumDeliveriesPerRequest = EventPublisher.defaultMaximumDeliveriesPerRequest
    /// `limits:` of `HERALD_CONFIG`, else `HERALD_MAX_WATCH_KEYS`, `HERALD_MAX_ALIASES`,
    /// `HERALD_MAX_BODY_BYTES`, `HERALD_MAX_BATCH_BODY_BYTES`; unset ones keep the API's defaults.
    var limits = ConfigFile.Limits()
    /// `HERALD_CORS_ORIGINS`: web origins whose pages may call the API from a browser.
    var browserOrigins: Set<String> = []
    /// `HERALD_KASPA_NETWORK`: the network served — the chain source checks the node's, and
    /// registrations of another network's addresses are refused.
    var kaspaNetwork: (id: String, prefix: KaspaAddress.Prefix)?
    /// `HERALD_WEBPUSH_*`: where Web Push may be sent and which extra roots to trust.
    var webPush = WebPushSettings()
    /// `HERALD_SHUTDOWN_GRACE_SECONDS`: how long a SIGTERM/SIGINT waits for sends in flight and
    /// their outcomes before the rest is cancelled (default 20).
    var shutdownGrace: Duration = .seconds(20)

    /// Reads the process environment; bad values print `{"status":"invalid",…}` and exit 2.
    static func load() throws -> ServeSettings {
        do {
            return try ServeSettings(environment: ProcessInfo.processInfo.environment)
        } catch let error as InvalidInput {
            throw CLIOutput.invalid(field: error.field, message: error.message)
        } catch let error as HeraldConfigurationError {
            // APNs, FCM and transport settings alike.
            throw CLIOutput.invalid(field: error.field, message: error.message)
        }
    }

    init(environment env: [String: String]) throws {
        let file = try env["HERALD_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }.map(ConfigFile.load(path:))
        if let h = file?.httpHost ?? env["HERALD_HTTP_HOST"], !h.isEmpty { host = h }
        if let p = file?.httpPort.map(String.init) ?? env["HERALD_HTTP_PORT"], !p.isEmpty {
            guard let parsed = Int(p), (0...65_535).contains(parsed) else {
                throw InvalidInput(field: "HERALD_HTTP_PORT", message: "is a port number, not \(p)")
            }
            port = parsed
        }
        if let h = file?.adminHost ?? env["HERALD_ADMIN_HOST"], !h.isEmpty { adminHost = h }
        if let p = file?.adminPort.map(String.init) ?? env["HERALD_ADMIN_PORT"], !p.isEmpty {
            guard let parsed = Int(p), (0...65_535).contains(parsed) else {
                throw InvalidInput(field: "HERALD_ADMIN_PORT", message: "is a port number, not \(p)")
            }
            adminPort = parsed
        }
        if adminPort != 0, adminPort == port {
            throw InvalidInput(field: "HERALD_ADMIN_PORT", message: "is the API's port \(port) (HERALD_HTTP_PORT); the admin listener needs one of its own")
        }
        if let url = file?.databaseURL ?? env["HERALD_DATABASE_URL"], !url.isEmpty {
            if url.hasPrefix("sqlite:") {
                databasePath = String(url.dropFirst("sqlite:".count))
                guard !databasePath.isEmpty else { throw InvalidInput(field: "HERALD_DATABASE_URL", message: "sqlite: needs a path") }
            } else if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
                do {
                    _ = try PostgresStore(url: url)
                } catch {
                    throw InvalidInput(field: "HERALD_DATABASE_URL", message: "\(error) (postgres://user:password@host:port/database?sslmode=…)")
                }
                postgresURL = url
            } else {
                throw InvalidInput(field: "HERALD_DATABASE_URL", message: "is sqlite:<path> or postgres://…")
            }
        }
        if let days = file?.staleAfterDays.map(String.init) ?? env["HERALD_STALE_AFTER_DAYS"], !days.isEmpty {
            guard let parsed = Int(days), parsed >= 1 else {
                throw InvalidInput(field: "HERALD_STALE_AFTER_DAYS", message: "is a whole number of days, 1 or more")
            }
            staleAfterDays = parsed
        }
        if let hours = file?.retentionHours {
            retentionHours = hours
        } else if let hours = try Self.integer(env, "HERALD_RETENTION_HOURS", in: 0...87_600, "is a whole number of hours from 0 (keep everything) to 87600") {
            retentionHours = hours
        }
        if let lease = env["HERALD_OUTBOX_LEASE_SECONDS"], !lease.isEmpty {
            // A lease shorter than a send's deadline would let another worker take a push still in flight.
            guard let parsed = Int(lease), parsed >= Self.minimumLeaseSeconds else {
                throw InvalidInput(
                    field: "HERALD_OUTBOX_LEASE_SECONDS",
                    message: "is a whole number of seconds, \(Self.minimumLeaseSeconds) or more (a push's APNs deadline is 10 s)")
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
                throw InvalidInput(field: "HERALD_KASPA_NETWORK", message: "is mainnet, testnet (any testnet), testnet-<n> (testnet-10), simnet or devnet, not \(text)")
            }
            kaspaNetwork = (text, prefix)
        }
        webPush = try WebPushSettings(environment: env)
        if let value = try Self.integer(env, "HERALD_HTTP_IDLE_TIMEOUT_SECONDS", in: 1...3_600, "is a whole number of seconds from 1 to 3600") { httpIdleTimeoutSeconds = value }
        if let value = try Self.integer(env, "HERALD_HTTP_REQUEST_TIMEOUT_SECONDS", in: 1...600, "is a whole number of seconds from 1 to 600") {
            httpRequestTimeoutSeconds = value
        }
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
                throw InvalidInput(field: "HERALD_KASPA_WRPC_URL", message: "is ws://host:port (a node's wRPC JSON endpoint, e.g. ws://127.0.0.1:18110)")
            }
            kaspaURL = url
        }
        if let text = env["HERALD_KASPA_MAX_AGE"], !text.isEmpty {
            let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
            let unit = text.last.flatMap { units[$0] }
            guard let value = Int64(unit == nil ? text : String(text.dropLast())), value > 0 else {
                throw InvalidInput(field: "HERALD_KASPA_MAX_AGE", message: "is a duration: seconds, or a number with s, m, h or d (24h)")
            }
            kaspaMaximumAge = .seconds(value * (unit ?? 1))
        }
        func number(_ name: String, _ current: Double) throws -> Double {
            guard let text = env[name], !text.isEmpty else { return current }
            guard let value = Double(text), value >= 0, value.isFinite else {
                throw InvalidInput(field: name, message: "is a number, 0 or more (a rate of 0 turns the limit off)")
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
                    throw InvalidInput(field: name, message: "is a comma-separated list of CIDRs (10.0.0.0/8, ::1/128), not \(cidr)")
                }
                return network
            }
        }
        rateLimits.trustedProxies = try networks("HERALD_TRUSTED_PROXIES")
        for entry in Self.list(env["HERALD_CORS_ORIGINS"]) {
            guard let origin = BrowserOrigins.origin(entry) else {
                throw InvalidInput(
                    field: "HERALD_CORS_ORIGINS",
                    message: "is a comma-separated list of web origins (https://app.example.com, http://localhost:8000), not \(entry)")
            }
            browserOrigins.insert(origin)
        }
        rateLimits.matrixClients = try networks("HERALD_MATRIX_ALLOWED_CLIENTS")
        if let text = env["HERALD_TRUSTED_PROXY_HEADER"], !text.isEmpty {
            guard let header = ProxyHeader(rawValue: text.lowercased()) else {
                throw InvalidInput(field: "HERALD_TRUSTED_PROXY_HEADER", message: "is x-forwarded-for or forwarded (the header your proxy writes), not \(text)")
            }
            rateLimits.proxyHeader = header
        }
        rateLimits.matrix = .init(
            rate: try number("HERALD_MATRIX_RATE", rateLimits.matrix.rate),
            burst: max(1, try number("HERALD_MATRIX_BURST", rateLimits.matrix.burst)))
        if let file {
            apps = file.apps
            matrix = file.matrix
        } else {
            matrix = try Self.matrixApps(env["HERALD_MATRIX_APPS"] ?? "")
            let registrationKeys = try Self.keys(env, "HERALD_REGISTRATION_KEYS")
            var registration: RegistrationPolicy = registrationKeys.isEmpty ? .open : .bearer(registrationKeys)
            let secret = env["HERALD_REGISTRATION_JWT_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
            let publicKey = env["HERALD_REGISTRATION_JWT_PUBLIC_KEY"].flatMap { $0.isEmpty ? nil : $0 }
            if secret != nil || publicKey != nil {
                guard registrationKeys.isEmpty else {
                    throw InvalidInput(field: "HERALD_REGISTRATION_KEYS", message: "is for the bearer policy; the JWT variables choose the signed one")
                }
                registration = .signed(try RegistrationSigning.keys(
                    secret: secret, publicKeyPath: publicKey, secretField: "HERALD_REGISTRATION_JWT_SECRET",
                    publicKeyField: "HERALD_REGISTRATION_JWT_PUBLIC_KEY", policyField: "HERALD_REGISTRATION_JWT_SECRET",
                    error: { InvalidInput(field: $0, message: $1) }))
            }
            if let policy = env["HERALD_REGISTRATION_POLICY"], !policy.isEmpty {
                // Named outright; bearer and signed take their keys from their own variables.
                switch (policy, registration) {
                case ("open", .open), ("bearer", .bearer), ("signed", .signed): break
                case ("wallet", .open): registration = .wallet
                default:
                    throw InvalidInput(
                        field: "HERALD_REGISTRATION_POLICY",
                        message: "is open, bearer (with HERALD_REGISTRATION_KEYS), signed (with HERALD_REGISTRATION_JWT_*) or wallet (with neither), not \(policy) here")
                }
            }
            var settings = AppSettings(
                id: "default", publishKeys: try Self.keys(env, "HERALD_PUBLISH_KEYS"), registration: registration)
            settings.maximumDevices = try Self.integer(env, "HERALD_MAX_DEVICES", in: 1...100_000_000, "is a whole number from 1 to 100000000")
            if let text = env["HERALD_PRIVACY"], !text.isEmpty {
                guard let privacy = PushPrivacy(rawValue: text) else { throw InvalidInput(field: "HERALD_PRIVACY", message: "is standard or minimal") }
                settings.privacy = privacy
            }
            // GhostTalk's testing-only /apns/send.
            settings.ghostTalkSendEnabled = ["1", "true", "yes"].contains(env["HERALD_GHOSTTALK_SEND_ENABLED"]?.lowercased() ?? "")
            var app = ConfigFile.App(settings: settings, apns: try APNsSettings.fromEnvironment(env))
            // On the built-in simulator too, the app's builds are of one environment: its
            // registrations default to it, and its pushes go to that environment's host.
            if app.apns == nil { app.settings.production = try APNsSettings.environment(env) == .production }
            app.fcm = try FCMSettings.fromEnvironment(env)
            app.vapid = try VAPIDSettings.fromEnvironment(env)
            app.simulatorTopic = env["HERALD_APNS_TOPIC"].flatMap { $0.isEmpty ? nil : $0 } ?? "com.example.herald"
            apps = [app]
        }
    }

    /// The APNs request deadline (10 s) and a margin for the store.
    static let minimumLeaseSeconds = 15

    /// `HERALD_MATRIX_APPS`: `app_id=type` pairs (type apns, fcm or webpush), comma-separated, in
    /// order, for the app "default" with Sygnal's defaults (the config file's `matrix:` has the rest).
    static func matrixApps(_ text: String) throws -> [MatrixApp] {
        try text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map { entry in
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, let kind = MatrixApp.Kind(rawValue: parts[1]) else {
                throw InvalidInput(field: "HERALD_MATRIX_APPS", message: "is app_id=type pairs (type apns, fcm or webpush), not \(entry)")
            }
            return MatrixApp(pattern: parts[0], app: "default", kind: kind)
        }
    }

    /// A comma-separated list of bearer keys, each at least 16 characters.
    static func keys(_ env: [String: String], _ name: String) throws -> Set<String> {
        let keys = list(env[name])
        if keys.contains(where: { $0.count < ConfigFile.minimumKeyLength }) {
            throw InvalidInput(field: name, message: "each key is at least \(ConfigFile.minimumKeyLength) characters")
        }
        return keys
    }

    /// A whole number from `range`, when the variable is set; else exit 2 with `message`.
    private static func integer(_ env: [String: String], _ name: String, in range: ClosedRange<Int>, _ message: String) throws -> Int? {
        guard let text = env[name], !text.isEmpty else { return nil }
        guard let value = Int(text), range.contains(value) else { throw InvalidInput(field: name, message: message) }
        return value
    }

    static func list(_ value: String?) -> Set<String> {
        Set((value ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
    }
}

/// A port another process holds, reported as the variable that chose it (exit 2), not as a
/// socket call's error.
enum PortInUse {
    static func named(_ error: any Error, _ field: String, port: Int) -> any Error {
        // NIO's bind error, possibly inside the server's own error.
        guard (error as? IOError)?.errnoCode == EADDRINUSE || "\(error)".contains("Address already in use") else { return error }
        return CLIOutput.invalid(field: field, message: "port \(port) is in use by another process")
    }
}
