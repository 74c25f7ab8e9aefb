import Foundation
import HeraldCore
public import HeraldDelivery
import HeraldPushCore
public import HeraldStore
public import Hummingbird
import Logging

/// `POST /v1/events` and `POST /v1/events:batch`, behind a publisher key. Answers only once the
/// events and their deliveries are committed; never waits on a push service.
public struct PublishAPI: Sendable {
    public let publisher: EventPublisher
    public let configuration: APIConfiguration
    /// Where `GET /v1/events/{id}` reads an event's deliveries.
    public let events: any StoreStatistics

    public init(publisher: EventPublisher, configuration: APIConfiguration, events: any StoreStatistics) {
        self.publisher = publisher
        self.configuration = configuration
        self.events = events
    }

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.post("/v1/events") { request, context in
            let key = try configuration.apps.publisherKey(request)
            let json = try await JSONBody.parse(request, limit: configuration.maximumBodySize)
            let body = try JSONBody.read { () throws(JSONFieldError) in try EventPublisher.Request(json: json) }
            let published = try await publisher.publish([body], publisherKey: key, requestID: context.logger.requestID)[0]
            Self.log([published], logger: context.logger)
            return RegistrationAPI.json(.object(Self.accepted(published) + [.init("unknown_tokens", .array(published.unknownTokens.map(JSONValue.string)))]), status: .accepted)
        }
        // What became of an event: its deliveries by state, with the push services' reasons —
        // never a token. Only a publisher key of the event's app sees it (any other gets the 404
        // an unknown id gets).
        router.get("/v1/events/:id") { request, context in
            let key = try configuration.apps.publisherKey(request)
            let id = context.parameters.get("id") ?? ""
            guard let status = try await events.event(id: id), configuration.apps[status.app]?.isPublisherKey(key) == true else {
                throw APIError(
                    .notFound, code: "not_found", message: "no event \(id) of this publisher key's apps (events are kept for the retention, HERALD_RETENTION_HOURS)",
                    field: "id")
            }
            return RegistrationAPI.json(Self.json(status, now: publisher.clock.now()))
        }
        router.post("/v1/events:batch") { request, context in
            let key = try configuration.apps.publisherKey(request)
            let json = try await JSONBody.parse(request, limit: configuration.maximumBatchBodySize)
            let events = try JSONBody.read { () throws(JSONFieldError) -> [EventPublisher.Request]? in
                try JSONObjectReader(json, at: "").array("events")?.enumerated().map { (i, event) throws(JSONFieldError) in
                    try EventPublisher.Request(json: event, at: "events[\(i)]")
                }
            }
            guard let events else { throw APIError.missing("events") }
            guard !events.isEmpty, events.count <= EventPublisher.maximumBatch else {
                throw APIError.invalid("events", "a batch has 1 to \(EventPublisher.maximumBatch) events")
            }
            let published = try await publisher.publish(
                events, publisherKey: key, fieldPrefix: { "events[\($0)]." }, requestID: context.logger.requestID)
            Self.log(published, logger: context.logger)
            return RegistrationAPI.json(
                .object([
                    .init("events", .array(published.map { .object(Self.accepted($0)) }))
                ]),
                status: .accepted)
        }
    }

    /// An accepted event's fields: its deliveries, and `fanout: true` for one that went to a
    /// fan-out job (its deliveries are made as the job expands: `GET /v1/events/{id}`).
    static func accepted(_ published: EventPublisher.Published) -> [JSONValue.Field] {
        var fields: [JSONValue.Field] = [.init("deliveries", .int(Int64(published.event.deviceRowIDs.count))), .init("event_id", .string(published.event.id))]
        if published.event.fanout != nil { fields.append(.init("fanout", .bool(true))) }
        return fields
    }

    /// The states a publisher sees: queued (pending or being sent), sent, failed (a push service
    /// refused it, or its device was dropped), expired; and a fan-out's totals.
    static func json(_ status: EventStatus, now: Date) -> [String: JSONValue] {
        func state(_ s: DeliveryState) -> String {
            switch s {
            case .pending, .sending: "queued"
            case .sent: "sent"
            case .failed, .dropped: "failed"
            case .expired: "expired"
            }
        }
        var counts: [String: Int64] = ["queued": 0, "sent": 0, "failed": 0, "expired": 0]
        var reasons: [String: [String: Int64]] = [:]
        for (s, n) in status.deliveries { counts[state(s), default: 0] += Int64(n) }
        for (s, byReason) in status.reasons {
            for (reason, n) in byReason { reasons[state(s), default: [:]][reason, default: 0] += Int64(n) }
        }
        var json: [String: JSONValue] = [
            "event_id": .string(status.id), "app": .string(status.app), "template": .string(status.template),
            "created_at": .int(Int64(status.createdAt.timeIntervalSince1970)), "expires_at": .int(Int64(status.expiresAt.timeIntervalSince1970)),
            "deliveries": .sortedObject(counts.mapValues(JSONValue.int)),
            "reasons": .sortedObject(reasons.mapValues { .sortedObject($0.mapValues(JSONValue.int)) }),
        ]
        if let fanout = status.fanout {
            // Devices: counted when the job started (any app's watchers of its keys), exact once
            // expanded. Pending: not yet expanded, and expanded but not yet sent.
            let unexpanded = fanout.finished ? 0 : max(0, (fanout.devices ?? fanout.expanded) - fanout.expanded)
            let sent = counts["sent"] ?? 0
            let seconds = max(0.001, now.timeIntervalSince(status.createdAt))
            json["fanout"] = .object([
                .init("devices", fanout.devices.map { .int(Int64($0)) } ?? .null), .init("expanded", .int(Int64(fanout.expanded))),
                .init("sent", .int(sent)), .init("failed", .int((counts["failed"] ?? 0) + (counts["expired"] ?? 0))),
                .init("pending", .int(Int64(unexpanded) + (counts["queued"] ?? 0))),
                .init("rate_per_second", .double((Double(sent) / seconds * 10).rounded() / 10)),
                .init("finished", .bool(fanout.finished && counts["queued"] == 0)),
            ])
        }
        return json
    }

    /// One `debug` line per accepted event, through the request's logger: the event id beside the
    /// request id (its metadata), so one push can be followed from the request that made it to
    /// the outbox's lines about its deliveries (which name the event id).
    static func log(_ published: [EventPublisher.Published], logger: Logger) {
        guard logger.logLevel <= .debug else { return }
        for p in published {
            logger.debug("event accepted", metadata: [
                "event": "\(p.event.id)", "app": "\(p.event.app)", "template": "\(p.event.template)",
                "deliveries": "\(p.event.deviceRowIDs.count)", "unknown_tokens": "\(p.unknownTokens.count)",
            ])
        }
    }
}
