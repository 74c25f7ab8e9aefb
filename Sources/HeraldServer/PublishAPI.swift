import Foundation
import HeraldCore
import HeraldDelivery
import Hummingbird

/// `POST /v1/events` and `POST /v1/events:batch`, behind a publisher key. Answers only once the
/// events and their deliveries are committed; never waits on a push service.
public struct PublishAPI: Sendable {
    public let publisher: EventPublisher
    public let configuration: APIConfiguration

    public init(publisher: EventPublisher, configuration: APIConfiguration) {
        self.publisher = publisher
        self.configuration = configuration
    }

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.post("/v1/events") { request, _ in
            let key = try configuration.apps.publisherKey(request)
            let json = try await JSONBody.parse(request, limit: configuration.maximumBodySize)
            let body = try JSONBody.read { () throws(JSONFieldError) in try EventPublisher.Request(json: json) }
            let published = try await publisher.publish([body], publisherKey: key)[0]
            return RegistrationAPI.json(
                .object([
                    .init("deliveries", .int(Int64(published.event.deviceRowIDs.count))), .init("event_id", .string(published.event.id)),
                    .init("unknown_tokens", .array(published.unknownTokens.map(JSONValue.string))),
                ]),
                status: .accepted)
        }
        router.post("/v1/events:batch") { request, _ in
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
            let published = try await publisher.publish(events, publisherKey: key, fieldPrefix: { "events[\($0)]." })
            return RegistrationAPI.json(
                .object([
                    .init("events", .array(published.map {
                        .object([.init("deliveries", .int(Int64($0.event.deviceRowIDs.count))), .init("event_id", .string($0.event.id))])
                    }))
                ]),
                status: .accepted)
        }
    }
}
