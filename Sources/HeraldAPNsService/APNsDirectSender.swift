import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldPushCore
import HeraldPushService
import Logging
import NIOPosix

/// `herald send`'s APNs side: the options made into one checked `APNsNotification`, sent on a
/// client of its own.
struct APNsDirectSender: DirectSender {
    let notification: APNsNotification
    let client: APNsClient

    init(push: DirectPush, environment: [String: String], eventLoopGroup: MultiThreadedEventLoopGroup) throws {
        guard let settings = try APNsSettings.fromEnvironment(environment) else {
            throw HeraldConfigurationError(field: "HERALD_APNS_KEY_PATH", message: "set the HERALD_APNS_* credentials")
        }
        let key = try settings.loadSigningKey()
        var environmentOverride: APNsEnvironment?
        if let text = push.environment {
            guard let parsed = APNsEnvironment(rawValue: text) else {
                throw HeraldConfigurationError(field: "--environment", message: "is sandbox or production")
            }
            environmentOverride = parsed
        }
        notification = try Self.notification(push, topic: settings.topic)
        do {
            try notification.validate()
        } catch let error as APNsValidationError {
            throw DirectPushRefusal(field: error.field, message: error.message, reason: error.reason.rawValue)
        }
        var configuration = settings.clientConfiguration(environment: environmentOverride)
        configuration.connections = push.connections
        client = try APNsClient(
            configuration: configuration, tokens: APNsProviderTokenSource(key: key), eventLoopGroup: eventLoopGroup, logger: Logger(label: "herald.apns"))
    }

    func send() async -> DirectSendResult {
        var copy = notification
        copy.apnsID = UUID.random()  // Foundation's UUID() opens /dev/urandom each time
        switch await client.sendValidated(copy) {
        case .accepted(let id):
            return DirectSendResult(outcome: .accepted, report: ["status": .string("accepted"), "apns_id": .string(id.lowercasedString)])
        case .rejected(let status, let reason, let timestamp, _):
            return DirectSendResult(
                outcome: .rejected(reason: reason.rawValue),
                report: [
                    "status": .string("rejected"), "http_status": .int(status), "reason": .string(reason.rawValue),
                    "timestamp": timestamp.map { .int(Int($0.timeIntervalSince1970 * 1000)) } ?? .null,
                ])
        case .transportFailure(let failure):
            return DirectSendResult(outcome: .failed(failure.description), report: ["status": .string("failed"), "error": .string(failure.description)])
        }
    }

    func shutdown() async { await client.shutdown() }

    /// The notification the options describe: an alert by default, a background or VoIP push on request.
    static func notification(_ push: DirectPush, topic: String) throws -> APNsNotification {
        guard let type = PushType(rawValue: push.pushType), [.alert, .background, .voip].contains(type) else {
            throw HeraldConfigurationError(field: "--push-type", message: "is alert, background or voip")
        }
        let priority: PushPriority
        if let value = push.priority {
            guard let p = PushPriority(rawValue: value) else { throw HeraldConfigurationError(field: "--priority", message: "is 10, 5 or 1") }
            priority = p
        } else {
            priority = type == .background ? .considerate : .immediate
        }
        let payload: Data
        if let json = push.payloadJSON {
            payload = Data(json.utf8)
        } else {
            var aps: [String: Any]
            switch type {
            case .background: aps = ["content-available": 1]
            default: aps = ["alert": ["title": push.title ?? "Herald", "body": push.body ?? "Test push from herald send"], "sound": "default"]
            }
            if type == .voip { aps = [:] }
            var object: [String: Any] = ["aps": aps]
            if type == .voip { object["herald"] = ["title": push.title ?? "Herald", "body": push.body ?? "Test push"] }
            payload = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        }
        let resolvedTopic = type == .voip && !topic.hasSuffix(".voip") ? topic + ".voip" : topic
        return APNsNotification(
            deviceToken: push.token.lowercased(), topic: resolvedTopic, pushType: type, priority: priority,
            collapseID: push.collapseID, payload: Array(payload))
    }
}
