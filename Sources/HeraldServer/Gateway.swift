import Foundation
import HeraldCore
public import HeraldDelivery
public import HeraldMatrix
public import HeraldPushCore
public import HeraldStore
public import Hummingbird
public import Prometheus

/// A built-in simulator's control API as the admin listener carries it: the method, the path
/// within the API (`/stats`), the query and the body in; a status and a JSON body out.
public typealias SimulatorControlRoute = @Sendable (_ method: String, _ path: String, _ query: [String: String], _ body: [UInt8]) async -> (status: Int, json: String)

/// The whole HTTP API on one router: routes, middleware and encoding; publishing goes through
/// the one `EventPublisher`.
public enum Gateway {
    /// - Parameters:
    ///   - publisher: the publish use case every publishing route calls.
    ///   - metrics: the registry `/metrics` renders, and the metrics fed into it.
    ///   - sources: the event sources `/v1/stats` and `/readyz` report on (the Kaspa chain source).
    ///   - readiness: what `/readyz` checks besides the store (the built-in simulators listening).
    ///   - sending: what each app sends with, by platform (`credentials`, `simulator`), shown by `/readyz`.
    ///   - matrix: the Matrix apps `/_matrix/push/v1/notify` serves (none: no Matrix route).
    ///   - lanes: each app's lanes, shown by `/readyz` as sending or paused.
    ///   - readMarkers: the read-marker use case `POST /v1/push/read` calls (none: no such route).
    ///   - operations: whether `/metrics` and `/v1/stats` are served here too (`herald serve` serves
    ///     them only on its admin listener, `operationsRouter`).
    public static func router(
        store: any DeviceRegistry & StoreStatistics, configuration: APIConfiguration, publisher: EventPublisher,
        metrics: (HeraldMetrics, PrometheusCollectorRegistry) = HeraldMetrics.prometheus(),
        sources: [SourceReport] = [], readiness: [ReadinessCheck] = [], sending: [String: [String: String]] = [:],
        matrix: MatrixApps? = nil, lanes: [OutboxLane] = [], operations: Bool = true, readMarkers: ReadMarkers? = nil
    ) -> Router<HeraldRequestContext> {
        let router = Router(context: HeraldRequestContext.self)
        let served = ServedRoutes()
        router.add(middleware: RequestIDMiddleware())
        // Always there: with no origin listed it still names, in the log, the pages it keeps out.
        router.add(middleware: BrowserOriginsMiddleware(origins: configuration.browserOrigins))
        router.add(middleware: ErrorEnvelopeMiddleware(routes: served))
        router.add(middleware: HTTPMetricsMiddleware())
        router.add(middleware: RateLimitMiddleware(configuration.rateLimits, apps: configuration.apps))
        RegistrationAPI(store: store, configuration: configuration).addRoutes(to: router)
        if let readMarkers { ReadMarkerAPI(markers: readMarkers, configuration: configuration).addRoutes(to: router) }
        SafeWhisperAPI(store: store, configuration: configuration).addRoutes(to: router)
        ClaudiatorAPI(store: store, configuration: configuration).addRoutes(to: router)
        PublishAPI(publisher: publisher, configuration: configuration, events: store).addRoutes(to: router)
        GhostTalkAPI(store: store, configuration: configuration, publisher: publisher).addRoutes(to: router)
        if let matrix, !matrix.isEmpty {
            MatrixPushAPI(notifier: MatrixNotifier(publisher: publisher, apps: matrix, readMarkers: readMarkers), configuration: configuration).addRoutes(to: router)
        }
        let document = ByteBuffer(string: OpenAPIDocument.served(
            apps: configuration.apps.apps.map(\.id), maximumWatchKeys: configuration.registration.maximumWatchKeys, maximumAliases: configuration.registration.maximumAliases,
            matrix: !(matrix?.isEmpty ?? true), operations: operations, addedPlatforms: configuration.addedPlatformTokenSchemas,
            addedTemplates: publisher.templates.openAPIFieldsSchemas))
        router.get("/openapi.json") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "application/json"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: document))
        }
        // The public listener's /readyz says ready or not, and no more: which apps, simulators and
        // paused lanes an instance has is for its operator (the admin listener's /readyz).
        Health(store: store, readiness: readiness, sending: sending, lanes: lanes, sources: sources, detailed: operations).addRoutes(to: router)
        if operations { addOperations(to: router, store: store, metrics: metrics, sources: sources) }
        served.fill(router.routes.map { ($0.method.rawValue, "\($0.path)") })
        return router
    }

    /// The admin listener's routes: `/metrics`, `/v1/stats`, `/healthz` and `/readyz`, for the
    /// operator's network only (`HERALD_ADMIN_HOST`, `HERALD_ADMIN_PORT`).
    public static func operationsRouter(
        store: any DeviceRegistry & StoreStatistics, metrics: (HeraldMetrics, PrometheusCollectorRegistry),
        sources: [SourceReport] = [], readiness: [ReadinessCheck] = [], sending: [String: [String: String]] = [:],
        lanes: [OutboxLane] = [], simulators: [String: SimulatorControlRoute] = [:], browserOrigins: BrowserOrigins = BrowserOrigins()
    ) -> Router<HeraldRequestContext> {
        let router = Router(context: HeraldRequestContext.self)
        let served = ServedRoutes()
        router.add(middleware: RequestIDMiddleware())
        // The Web Push simulator's control API, for a page on a listed origin (Examples/web's
        // simulator mode: it subscribes there and reads what Herald pushed).
        router.add(middleware: BrowserOriginsMiddleware(origins: browserOrigins, paths: "/simulators/webpush/"))
        router.add(middleware: ErrorEnvelopeMiddleware(routes: served))
        router.add(middleware: HTTPMetricsMiddleware())
        Health(store: store, readiness: readiness, sending: sending, lanes: lanes, sources: sources).addRoutes(to: router)
        addOperations(to: router, store: store, metrics: metrics, sources: sources)
        for (name, control) in simulators { mount(control, at: "/simulators/" + name, on: router) }
        served.fill(router.routes.map { ($0.method.rawValue, "\($0.path)") })
        return router
    }

    /// A built-in simulator's control API under `prefix`: `GET prefix/stats` is its `GET /stats`.
    static func mount(_ control: @escaping SimulatorControlRoute, at prefix: String, on router: Router<HeraldRequestContext>) {
        for method in [HTTPRequest.Method.get, .post] {
            router.on(RouterPath(prefix + "/**"), method: method) { request, _ -> Response in
                let body = try await request.body.collect(upTo: 65_536)
                var query: [String: String] = [:]
                for (name, value) in request.uri.queryParameters where query[String(name)] == nil { query[String(name)] = String(value) }
                let answer = await control(method.rawValue, String(request.uri.path.dropFirst(prefix.count)), query, Array(buffer: body))
                return Response(
                    status: HTTPResponse.Status(code: answer.status), headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(string: answer.json)))
            }
        }
    }

    /// `/metrics` and `/v1/stats`: what the instance counts, for Prometheus and the operator.
    static func addOperations(
        to router: Router<HeraldRequestContext>, store: any DeviceRegistry & StoreStatistics,
        metrics: (HeraldMetrics, PrometheusCollectorRegistry), sources: [SourceReport]
    ) {
        let registry = metrics.1
        router.get("/metrics") { _, _ in
            await metrics.0.collect()
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
        router.get("/v1/stats") { _, _ in
            let stats = try await store.stats()
            let queued = (stats.deliveries[.pending] ?? 0) + (stats.deliveries[.sending] ?? 0)
            func counts(_ counts: [String: Int]) -> JSONValue { .sortedObject(counts.mapValues { .int(Int64($0)) }) }
            var body: [String: JSONValue] = [
                "registrations": .sortedObject(stats.devices.mapValues(counts)),
                "deliveries": counts(Dictionary(uniqueKeysWithValues: stats.deliveries.map { ($0.key.rawValue, $0.value) })),
                "failure_reasons": counts(stats.failureReasons),
                "dropped_reasons": counts(stats.droppedReasons),
                "queue_depth": .int(Int64(queued)),
                "oldest_pending_age_seconds": stats.oldestPending.map { .int(Int64(max(0, Int(Date().timeIntervalSince($0))))) } ?? .null,
            ]
            for source in sources { body[source.name] = .sortedObject(source.stats()) }
            return RegistrationAPI.json(body)
        }
    }
}

/// `/healthz` (the process answers) and `/readyz` (its dependencies), on both listeners: load
/// balancers ask the public one, which answers only whether the instance is ready.
struct Health {
    let store: any DeviceRegistry & StoreStatistics
    let readiness: [ReadinessCheck]
    let sending: [String: [String: String]]
    let lanes: [OutboxLane]
    let sources: [SourceReport]
    /// Name what is checked, how each app sends and its lanes' state (the admin listener).
    var detailed = true

    func addRoutes(to router: Router<HeraldRequestContext>) {
        let (store, readiness, sending, lanes, sources, detailed) = (store, readiness, sending, lanes, sources, detailed)
        router.get("/healthz") { _, _ in RegistrationAPI.json(["status": "ok"]) }
        // Ready: the store answers a cheap query and every check holds; else 503 naming each failure.
        // Either way the answer says what each dependency is doing: a lane paused for refused
        // credentials, or a chain source away from its node, is reported (it is not fixed by
        // sending traffic elsewhere, so it does not make the instance unready).
        router.get("/readyz") { _, _ in
            var failing: [String] = []
            do { try await store.ping() } catch { failing.append("store not reachable") }
            for check in readiness where await !check.isReady() { failing.append(check.name) }
            guard failing.isEmpty else {
                guard detailed else {
                    throw APIError(.serviceUnavailable, code: "not_ready", message: "not ready (the admin listener's /readyz says why)")
                }
                throw APIError(.serviceUnavailable, code: "not_ready", message: "not ready: " + failing.joined(separator: "; "))
            }
            guard detailed else { return RegistrationAPI.json(["ready": true]) }
            var body: [String: JSONValue] = [
                "ready": true, "checked": .array((["store"] + readiness.map(\.name)).map(JSONValue.string)),
                "apps": .sortedObject(sending.mapValues { .sortedObject($0.mapValues(JSONValue.string)) }),
            ]
            if !lanes.isEmpty {
                body["lanes"] = .sortedObject(Dictionary(grouping: lanes, by: \.app).mapValues { appLanes in
                    .sortedObject(Dictionary(appLanes.map { ($0.platform.rawValue, JSONValue.string($0.isPaused ? "paused" : "sending")) }) { a, _ in a })
                })
            }
            for source in sources { body[source.name] = .sortedObject(source.readiness()) }
            return RegistrationAPI.json(body)
        }
    }
}

/// An event source's state as `/v1/stats` and `/readyz` show it under `name`, read each time they
/// are asked (`herald serve`: the Kaspa chain source, under `kaspa`).
public struct SourceReport: Sendable {
    public var name: String
    /// `/v1/stats`'s object.
    public var stats: @Sendable () -> [String: JSONValue]
    /// `/readyz`'s object: connected, leading, how far behind.
    public var readiness: @Sendable () -> [String: JSONValue]

    public init(name: String, stats: @escaping @Sendable () -> [String: JSONValue], readiness: @escaping @Sendable () -> [String: JSONValue]) {
        self.name = name
        self.stats = stats
        self.readiness = readiness
    }
}
