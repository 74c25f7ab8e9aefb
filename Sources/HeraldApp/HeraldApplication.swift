import Foundation
import HeraldCore
public import HeraldDelivery
import HeraldKaspa
import HeraldMatrix
import HeraldPushCore
import HeraldPushService
public import HeraldServer
import HeraldSimulatorSupport
public import HeraldStore
import Hummingbird
public import Logging
import NIOCore
import NIOPosix
public import Prometheus
public import ServiceLifecycle
import UnixSignals

/// The gateway, built and ready to run: every long-running part in one `ServiceGroup`.
public struct HeraldApplication: Sendable {
    /// The services in start order; SIGTERM and SIGINT stop them in reverse.
    public let serviceGroup: ServiceGroup
    let eventLoopGroup: MultiThreadedEventLoopGroup
    let port: Int

    /// Runs until a signal (or `serviceGroup.triggerGracefulShutdown()`) and everything is closed.
    /// A service that fails (the port is taken) fails the run, once everything is closed.
    public func run() async throws {
        var failure: (any Error)?
        do {
            try await serviceGroup.run()
        } catch {
            failure = error
        }
        try await eventLoopGroup.shutdownGracefully()
        if let failure { throw PortInUse.named(failure, "HERALD_HTTP_PORT", port: port) }
    }
}

/// Where the API and the admin listener listen, once both do, and which built-in simulators'
/// control APIs the admin listener carries.
public struct ListeningAddresses: Sendable, Hashable {
    public var api: String
    public var apiPort: Int
    public var admin: String
    public var adminPort: Int
    public var simulators: Set<String>
}

/// Builds the gateway `settings` describe on `store`: the built-in simulators for apps without
/// credentials, a provider per app and push service, the outbox, the publisher and the
/// registration use case, the chain source, and the two listeners, as Hummingbird's template
/// `buildApplication` does.
/// - Parameters:
///   - metrics: what `/metrics` renders (the caller bootstraps `MetricsSystem` with its factory, once per process).
///   - onListening: called once the API and the admin listener both listen; `herald serve` prints its readiness line.
public func buildApplication(
    settings: ServeSettings, store: any Store, metrics: (HeraldMetrics, PrometheusCollectorRegistry) = HeraldMetrics.prometheus(),
    logger: Logger, onListening: @escaping @Sendable (ListeningAddresses) -> Void = ReadinessLine.print
) async throws -> HeraldApplication {
    try await SigningKeyRecord.check(settings.apps, store: store, shared: settings.postgresURL != nil, replacing: settings.signingKeyReplaces)
    let group = MultiThreadedEventLoopGroup(numberOfThreads: settings.eventLoops)
    let pushServices = settings.pushServices
    let push = try await PushServices.assemble(settings: settings, store: store, eventLoopGroup: group)
    let simulators = BuiltInSimulators(push.assembled.compactMap(\.simulator), logger: logger)
    var services = simulators.services
    push.collectMetrics(into: metrics.0, store: store, apps: settings.apps.map(\.settings))
    var outboxSettings = OutboxSettings()
    outboxSettings.lease = settings.outboxLease
    let outbox = Outbox(
        queue: store, providers: push.signedProviders(apps: settings.apps.map(\.settings)), settings: outboxSettings, logger: Logger(label: "herald.outbox"), metrics: metrics.0,
        dismissals: store)
    // Stops after the lanes and before the simulators: the providers' connections close
    // first, so a simulator's graceful stop has none left to wait for.
    let allProviders = push.providers.flatMap(\.providers)
    services.append(StopAtShutdown { for provider in allProviders { await provider.shutdown() } })
    services += outbox.services
    var api = settings.apiConfiguration(subscriptionKeys: push.subscriptionKeys)
    api.registration.tokenRules = push.registrationRules
    api.addedPlatformTokenSchemas = pushServices.openAPITokenSchemas
    // Fan-out jobs expand after the lanes in the group, so they stop first.
    let fanouts = FanoutExpander(
        store: store, apps: api.apps, outbox: outbox, platforms: Set(pushServices.platforms), pageSize: settings.fanoutPage,
        logger: Logger(label: "herald.fanout"))
    services.append(fanouts)
    metrics.0.addCollector { m in
        if let pending = try? await store.pendingFanoutDevices() { m.fanoutPending(devices: pending) }
    }
    let publisher = EventPublisher(
        store: store, apps: api.apps, outbox: outbox, metrics: metrics.0, platforms: Set(pushServices.platforms),
        pushLimits: pushServices.publishLimits, maximumDeliveriesPerRequest: settings.maximumDeliveriesPerRequest,
        fanoutThreshold: settings.fanoutThreshold, fanouts: fanouts)
    services += try await maintenance(settings: settings, store: store, logger: logger)
    // Read markers: the siblings' dismissals go out as they fall due, after the lanes in the
    // group so they stop first.
    let dismissals = DismissalDispatcher(
        ledger: store, publisher: publisher, window: settings.dismissWindowSeconds, clock: SystemClock(), logger: Logger(label: "herald.dismissals"))
    services.append(dismissals)
    let readMarkers = ReadMarkers(
        store: store, apps: api.apps, clock: SystemClock(), verifier: api.registration.schnorrVerifier, dismissWindow: settings.dismissWindowSeconds,
        dispatcher: dismissals)
    // The Kaspa chain source, when a node is configured: its events take the publish path, and
    // /v1/stats, /readyz and /metrics read its state when asked.
    var sources: [SourceReport] = []
    if let chainSource = settings.chainSource(store: store, sink: publisher) {
        services.append(chainSource)
        sources.append(SourceReport(name: "kaspa", stats: { chainSource.stats.statsFields }, readiness: { chainSource.stats.readinessFields }))
        metrics.0.addCollector { $0.kaspaSource(chainSource.stats) }
    }
    let listeners = Listeners(
        settings: settings, store: store, api: api, publisher: publisher, readMarkers: readMarkers, metrics: metrics, sources: sources,
        lanes: outbox.lanes, simulators: simulators, onListening: onListening)
    services += listeners.services(eventLoopGroup: group, logger: logger)
    settings.warnAboutOpenDoors(logger: logger)
    logger.info("herald serve", metadata: [
        "http": "\(settings.host):\(settings.port)", "admin": "\(settings.adminHost):\(settings.adminPort)", "database": "\(settings.databaseDescription)",
        "open_file_limit": "\(settings.openFileLimit)", "max_connections": "\(settings.maximumConnections)",
        "apps": "\(settings.apps.map(\.settings.id).joined(separator: ","))",
    ])
    // On SIGTERM/SIGINT the services stop in reverse order: the HTTP server stops accepting,
    // the chain source and the cleanup stop, each lane stops claiming and records the outcomes
    // of what it has in flight, then the simulators close. Past the grace period they are cancelled.
    var configuration = ServiceGroupConfiguration(
        services: services.map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    configuration.maximumGracefulShutdownDuration = settings.shutdownGrace
    configuration.maximumCancellationDuration = .seconds(5)
    return HeraldApplication(serviceGroup: ServiceGroup(configuration: configuration), eventLoopGroup: group, port: settings.port)
}

/// The stale-device cleanup (one pass before serving) and the retention pruner.
private func maintenance(settings: ServeSettings, store: any Store, logger: Logger) async throws -> [any Service] {
    let cleanup = StaleDeviceCleanup(store: store, staleAfterDays: settings.staleAfterDays)
    let removed = try await cleanup.once()
    logger.info("stale devices removed", metadata: ["removed": "\(removed)", "stale_after_days": "\(settings.staleAfterDays)"])
    // Always: with a retention of 0 its passes keep every event and only fold the store's counters.
    let pruner = RetentionPruner(store: store, retention: settings.retentionHours > 0 ? .seconds(settings.retentionHours * 3600) : nil)
    return [cleanup, pruner]
}

/// The built-in simulators, one per push service that some app has no credentials for.
struct BuiltInSimulators: Sendable {
    /// By name (`apns`).
    var running: [String: BuiltInSimulator] = [:]
    /// First in the group, so they stop last: pushes in flight at shutdown still reach them.
    var services: [any Service] = []

    /// The simulators the push services started, each stopping at shutdown; the operator is
    /// told of each.
    init(_ started: [BuiltInSimulator], logger: Logger) {
        for simulator in started {
            running[simulator.name] = simulator
            announce(simulator, logger: logger)
        }
    }

    /// A started simulator stops at shutdown (after the lanes), and the operator is told which
    /// apps it stands in for and where its control API answers.
    private mutating func announce(_ simulator: BuiltInSimulator, logger: Logger) {
        services.append(StopAtShutdown(stop: simulator.stop))
        logger.warning(
            "\(simulator.warning)",
            metadata: [
                "apps": "\(simulator.apps.joined(separator: ","))", "simulator": "\(simulator.address)",
                "control": "/simulators/\(simulator.name) on the admin listener",
            ])
    }

    /// `/readyz`: the built-in simulators still accept connections.
    var readiness: [ReadinessCheck] {
        running.values.sorted { $0.name < $1.name }.map { simulator in
            let isListening = simulator.isListening
            return ReadinessCheck(simulator.readinessName) { isListening() }
        }
    }

    /// Their control APIs, for the operator beside /metrics (docs/security.md).
    var controls: [String: SimulatorControlRoute] {
        var controls: [String: SimulatorControlRoute] = [:]
        for simulator in running.values {
            let control = simulator.control
            controls[simulator.name] = { method, path, query, body in
                let answer = await control(SimulatorControlCall(method: method, path: path, query: query, body: body))
                return (answer.status, answer.json)
            }
        }
        return controls
    }
}

/// Each push service assembled (its simulator, shared state and each app's provider), and each
/// app's providers, one per service in the registry's order.
struct PushServices {
    var assembled: [AssembledPushService] = []
    var providers: [(app: String, providers: [any PushProvider])] = []

    static func assemble(settings: ServeSettings, store: any Store, eventLoopGroup group: MultiThreadedEventLoopGroup) async throws -> PushServices {
        var push = PushServices()
        let apps = settings.apps.map(\.settings)
        for service in settings.configuredServices {
            push.assembled.append(try await service.assemble(apps: apps, store: store, eventLoopGroup: group))
        }
        // Each service's providers are in the apps' order.
        push.providers = apps.indices.map { index in (apps[index].id, push.assembled.map { $0.providers[index].provider }) }
        return push
    }

    /// Each platform's registration rule.
    var registrationRules: [Platform: any DeviceRegistrationRule] {
        Dictionary(assembled.map { ($0.platform, $0.registrationRule) }) { first, _ in first }
    }

    /// The key a client of each app subscribes with (Web Push's VAPID public key), by app id.
    var subscriptionKeys: [String: String] {
        assembled.reduce(into: [:]) { keys, service in keys.merge(service.subscriptionKeys) { first, _ in first } }
    }

    /// The providers as the outbox uses them: each app's pushes signed, and sealed to devices with
    /// keys, before its provider sends them (`connectionsOpen` reads the providers themselves).
    func signedProviders(apps: [AppSettings]) -> [(app: String, providers: [any PushProvider])] {
        providers.map { entry in
            guard let sealing = apps.first(where: { $0.id == entry.app })?.sealing else { return entry }
            // An app's providers are in the services' order.
            return (entry.app, zip(entry.providers, assembled).map { provider, service in
                SealingPushProvider(base: provider, sealing: sealing, carriage: service.carriage, now: { Date() })
            })
        }
    }

    /// Read at every scrape: each app's queue, sealing keys and sealing cost, the push services'
    /// connections and token refreshes.
    func collectMetrics(into metrics: HeraldMetrics, store: any Store, apps settings: [AppSettings]) {
        let readings = providers
        let connections = assembled.map { ($0.platform, $0.connectionsOpen) }
        let apps = settings.map(\.id)
        let sealing = settings.compactMap { app in app.sealing.map { (app.id, $0.sessions, $0.cost) } }
        metrics.addCollector { m in
            if let queues = try? await store.queues() {
                let now = Date()
                for app in apps {
                    let queue = queues[app]
                    m.queue(app: app, depth: queue?.depth ?? 0, oldestPendingSeconds: queue?.oldest.map { max(0, now.timeIntervalSince($0)) } ?? 0)
                }
            }
            for (app, sessions, cost) in sealing {
                let made = sessions.made
                m.sealingKeysMade(app: app, atRegistration: made.atRegistration, atPush: made.atPush)
                let total = cost.total
                m.sealingCost(app: app, pushes: total.pushes, cpuSeconds: total.cpuSeconds)
            }
            for (app, list) in readings {
                for provider in list { m.tokenRefreshes(app: app, platform: provider.platform, stats: provider.stats) }
            }
            for (platform, open) in connections { m.connectionsOpen(platform: platform, open()) }
        }
    }
}

/// The API listener and the admin listener (`/metrics`, `/v1/stats`, the simulators' controls).
struct Listeners {
    let settings: ServeSettings
    let store: any Store
    let api: APIConfiguration
    let publisher: EventPublisher
    let readMarkers: ReadMarkers
    let metrics: (HeraldMetrics, PrometheusCollectorRegistry)
    let sources: [SourceReport]
    let lanes: [OutboxLane]
    let simulators: BuiltInSimulators
    let onListening: @Sendable (ListeningAddresses) -> Void

    /// Connections the admin listener takes at once.
    static let adminConnectionCap = 128

    /// The admin listener, then the API last in the group, so it stops first: no new requests
    /// while the rest winds down.
    func services(eventLoopGroup group: MultiThreadedEventLoopGroup, logger: Logger) -> [any Service] {
        let readiness = simulators.readiness
        let sending = self.sending
        let controls = simulators.controls
        let line = ReadinessLine(host: settings.host, adminHost: settings.adminHost, simulators: Set(controls.keys), report: onListening)
        // `/metrics` and `/v1/stats` on a listener of their own, loopback by default: what the
        // instance counts is for its operator, not for whoever reaches the API. Held to the API's
        // deadlines, with a cap of its own (a scraper or two need no more) so a crowd there cannot
        // take the API's descriptors.
        let adminConnections = ConnectionTable(limits: ConnectionLimits(
            maximumConnections: min(Self.adminConnectionCap, settings.maximumConnections),
            requestTimeout: .seconds(Int64(settings.httpRequestTimeoutSeconds)), idleTimeout: .seconds(Int64(settings.httpIdleTimeoutSeconds))))
        let admin = Application(
            router: Gateway.operationsRouter(
                store: store, metrics: metrics, sources: sources, readiness: readiness, sending: sending, lanes: lanes, simulators: controls,
                browserOrigins: api.browserOrigins),
            server: .http1(configuration: .init(
                additionalChannelHandlers: [adminConnections.handler()], idleTimeout: .seconds(Int64(settings.httpIdleTimeoutSeconds)))),
            configuration: .init(address: .hostname(settings.adminHost, port: settings.adminPort), serverName: "Herald"),
            onServerRunning: { channel in await line.admin(channel.localAddress?.port ?? 0) },
            eventLoopGroupProvider: .shared(group), logger: logger)
        let router = Gateway.router(
            store: store, configuration: api, publisher: publisher, metrics: metrics, sources: sources, readiness: readiness,
            sending: sending, matrix: MatrixApps(settings.matrix, pushers: settings.pushServices.matrixPushers), lanes: lanes, operations: false,
            readMarkers: readMarkers)
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
            onServerRunning: { channel in await line.api(channel.localAddress?.port ?? 0) },
            eventLoopGroupProvider: .shared(group), logger: logger)
        return [PortNamingService(admin, field: "HERALD_ADMIN_PORT", port: settings.adminPort), app]
    }

    /// Each app's way of sending, per push service with settings, for `/readyz` and `/v1/stats`.
    var sending: [String: [String: String]] {
        var sending: [String: [String: String]] = [:]
        for app in settings.apps {
            var ways: [String: String] = [:]
            for service in settings.configuredServices {
                if let way = service.sending(app: app.settings.id) { ways[service.platform.rawValue] = way }
            }
            sending[app.settings.id] = ways
        }
        return sending
    }
}

extension ServeSettings {
    /// The HTTP API's settings; Web Push registrations are answered with each app's `subscriptionKeys`.
    func apiConfiguration(subscriptionKeys: [String: String]) -> APIConfiguration {
        var api = APIConfiguration()
        api.apps = AppDirectory(apps.map(\.settings))
        api.rateLimits = rateLimits
        api.registration.kaspaNetwork = kaspaNetwork?.prefix
        api.vapidPublicKeys = subscriptionKeys
        api.browserOrigins = BrowserOrigins(browserOrigins)
        if let value = limits.watchKeys { api.registration.maximumWatchKeys = value }
        if let value = limits.aliases { api.registration.maximumAliases = value }
        if let value = limits.bodyBytes { api.maximumBodySize = value }
        if let value = limits.batchBodyBytes { api.maximumBatchBodySize = value }
        return api
    }

    /// `herald devices import` on `store`: the apps, limits and Kaspa network `herald serve` would
    /// check registrations against, with the built-in token rules (APNs, FCM; a browser's
    /// subscription is registered through the API, where its push service is checked).
    public func deviceImport(store: any DeviceRegistry) -> DeviceImport {
        let api = apiConfiguration(subscriptionKeys: [:])
        return DeviceImport(
            registrar: api.registrar(store: store, clock: SystemClock()), maximumLineBytes: api.maximumBodySize,
            decode: RegistrationAPI.registration(json:))
    }

    /// The Kaspa chain source, when a node is configured.
    func chainSource(store: any Store, sink: any KasiaEventSink) -> KaspaChainSource? {
        kaspaURL.map { url in
            var configuration = KaspaChainSource.Configuration(url: url)
            configuration.maximumAge = kaspaMaximumAge
            configuration.network = kaspaNetwork?.id
            return KaspaChainSource(configuration: configuration, store: store, sink: sink, logger: Logger(label: "herald.kaspa"))
        }
    }

    /// A misspelled variable or a config file without keys must not pass for a working setup.
    func warnAboutOpenDoors(logger: Logger) {
        for app in apps where app.settings.publishKeys.isEmpty {
            logger.warning(
                "publishing is off for this app: it has no publisher key (HERALD_PUBLISH_KEYS, or publish_keys in HERALD_CONFIG); POST /v1/events answers 401",
                metadata: ["app": "\(app.settings.id)"])
        }
        for app in apps where app.settings.sealing?.keyIsEphemeral == true {
            logger.warning(
                "pushes are signed with a key made at this start: a phone that pinned the last one refuses them; make one with herald signing-key and set HERALD_SIGNING_KEY_PATH (or signing_key_path in HERALD_CONFIG)",
                metadata: ["app": "\(app.settings.id)"])
        }
        for app in apps where app.settings.registration == .open {
            logger.warning(
                "registration is open: anyone who reaches Herald can register any device token for this app, watching any key and any Kaspa address, and unregister tokens they know; put a registration key or a trusted network in front",
                metadata: ["app": "\(app.settings.id)"])
        }
    }
}
