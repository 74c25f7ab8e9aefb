import Foundation
import HeraldDelivery
public import HeraldCore
import HeraldPushCore
public import HeraldStore
public import Hummingbird

/// GhostTalk's notifier API (`/apns/*`), unchanged, on the
/// core registry: a device registers for a session (watch key `session:<id>`).
public struct GhostTalkAPI: Sendable {
    public let store: any DeviceRegistry & StoreStatistics
    public let configuration: APIConfiguration
    /// Publishing, for the testing-only `/apns/send`.
    let publisher: EventPublisher
    public let clock: any HeraldClock
    let registrar: DeviceRegistrar

    init(store: any DeviceRegistry & StoreStatistics, configuration: APIConfiguration, publisher: EventPublisher, clock: any HeraldClock = SystemClock()) {
        self.store = store
        registrar = configuration.registrar(store: store, clock: clock)
        self.configuration = configuration
        self.publisher = publisher
        self.clock = clock
    }

    struct RegisterBody: Decodable {
        var session_id: String?
        var device_token: String?
    }

    struct SessionBody: Decodable {
        var session_id: String?
    }

    struct SendBody: Decodable {
        var session_id: String?
        var payload: JSONValue?
    }

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        for prefix in ["", "/apps/:app"] {
            router.post("\(prefix)/apns/register") { request, context in try await register(request, app: context.parameters.get("app")) }
            router.post("\(prefix)/apns/unregister") { request, context in try await unregister(request, app: context.parameters.get("app")) }
            router.get("\(prefix)/apns/stats") { request, context in try await stats(request, app: context.parameters.get("app")) }
            router.post("\(prefix)/apns/send") { request, context in
                try await send(request, app: context.parameters.get("app"), requestID: context.logger.requestID)
            }
        }
    }

    func register(_ request: Request, app prefix: String?) async throws -> Response {
        let (app, grant) = try await configuration.apps.registeringApp(request, prefix: prefix, now: clock.now())
        let body = try await JSONBody.decode(RegisterBody.self, from: request, limit: configuration.maximumBodySize)
        let session = try Self.sessionKey(body.session_id)
        try AppDirectory.require(grant, covers: body.session_id, field: "session_id")
        let token = try registrar.token(body.device_token, platform: .ios)
        // Under a signed policy the device is the granted identity's, as on the native route.
        _ = try await registrar.register(
            Registration(app: app.id, token: token, attributes: DeviceAttributes(production: app.production), deviceID: grant.identity,
                         watchSet: try WatchSet(watched: [session])),
            app: app, grant: grant, field: "device_token")
        return RegistrationAPI.json(["success": true, "message": "Device registered successfully"])
    }

    /// Removes the devices registered for the session.
    func unregister(_ request: Request, app prefix: String?) async throws -> Response {
        let (app, grant) = try await configuration.apps.registeringApp(request, prefix: prefix, now: clock.now())
        let body = try await JSONBody.decode(SessionBody.self, from: request, limit: configuration.maximumBodySize)
        let session = try Self.sessionKey(body.session_id)
        try AppDirectory.require(grant, covers: body.session_id, field: "session_id")
        for device in try await store.devices(app: app.id, watching: session.description) {
            _ = try await store.unregister(app: app.id, token: device.token)
        }
        return RegistrationAPI.json(["success": true, "message": "Device unregistered successfully"])
    }

    func stats(_ request: Request, app prefix: String?) async throws -> Response {
        let (app, _) = try await configuration.apps.registeringApp(request, prefix: prefix, now: clock.now())
        let registrations = try await store.stats().devices[app.id]?.values.reduce(0, +) ?? 0
        return RegistrationAPI.json(["total_registrations": .int(Int64(registrations)), "production_mode": .bool(app.production), "topic": .string(app.topic)])
    }

    /// Testing only: 404 unless the app enables it, and always behind one of its publisher keys.
    func send(_ request: Request, app prefix: String?, requestID: String?) async throws -> Response {
        let app = try configuration.apps.compatibilityApp(request, prefix: prefix)
        // The key first: without one, the route says nothing, not even whether it is on.
        let key = try configuration.apps.publisherKey(request)
        guard app.ghostTalkSendEnabled else {
            throw APIError(.notFound, code: "disabled", message: "/apns/send is for testing and is off for app \(app.id)")
        }
        let body = try await JSONBody.decode(SendBody.self, from: request, limit: configuration.maximumBodySize)
        _ = try Self.sessionKey(body.session_id)
        guard var fields = body.payload?.objectFields else { throw APIError.invalid("payload", "payload is a JSON object") }
        // The push goes to the session the request names.
        fields.removeAll { $0.key == "session_id" }
        fields.append(.init("session_id", .string(body.session_id!)))
        let event = EventPublisher.Request(app: app.id, template: "session.message", fields: .object(fields))
        let prepared = try await publisher.publish([event], publisherKey: key, requestID: requestID)[0]
        return RegistrationAPI.json(["success": true, "message": "Notification sent", "deliveries": .int(Int64(prepared.event.deviceRowIDs.count))])
    }

    static func sessionKey(_ id: String?) throws -> WatchKey {
        guard let id else { throw APIError.missing("session_id") }
        do { return try WatchKey("session:" + id) } catch { throw APIError.invalid("session_id", "\(error)") }
    }
}
