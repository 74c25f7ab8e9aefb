import Foundation
import HeraldFCM
import HeraldFCMCore
import HeraldPushCore
import HeraldPushService
import Logging
import NIOPosix

/// `herald send --platform android`: the options made into one checked `FCMMessage`, sent on a
/// client of its own.
struct FCMDirectSender: DirectSender {
    let message: FCMMessage
    let client: FCMClient

    init(push: DirectPush, environment: [String: String], eventLoopGroup: MultiThreadedEventLoopGroup) throws {
        guard let settings = try FCMSettings.fromEnvironment(environment) else {
            throw HeraldConfigurationError(field: "HERALD_FCM_CREDENTIALS_FILE", message: "set the HERALD_FCM_* credentials")
        }
        message = try Self.message(push)
        do {
            try message.validate()
        } catch let error as FCMValidationError {
            throw DirectPushRefusal(field: error.field, message: error.reason)
        }
        var configuration = settings.clientConfiguration
        configuration.connections = push.connections
        client = try FCMClient(
            configuration: configuration, account: settings.account, projectID: settings.projectID, eventLoopGroup: eventLoopGroup,
            logger: Logger(label: "herald.fcm"))
    }

    func send() async -> DirectSendResult {
        let result: FCMResult
        do { result = try await client.send(message) } catch { result = .transportFailure("\(error)") }
        switch result {
        case .accepted(let name):
            return DirectSendResult(outcome: .accepted, report: ["status": .string("accepted"), "name": .string(name)])
        case .rejected(let answer):
            return DirectSendResult(
                outcome: .rejected(reason: answer.reason),
                report: [
                    "status": .string("rejected"), "http_status": .int(answer.httpStatus), "reason": .string(answer.reason),
                    "message": answer.message.map { .string($0) } ?? .null,
                ])
        case .transportFailure(let text):
            return DirectSendResult(outcome: .failed(text), report: ["status": .string("failed"), "error": .string(text)])
        }
    }

    func shutdown() async { await client.shutdown() }

    /// The data message the options describe (`--push-type background`: empty data, normal priority).
    static func message(_ push: DirectPush) throws -> FCMMessage {
        let target: FCMMessage.Target
        switch push.tokenKind {
        case "token": target = .token(push.token)
        case "fid": target = .fid(push.token)
        default: throw HeraldConfigurationError(field: "--token-kind", message: "is token or fid")
        }
        guard ["alert", "background", "voip"].contains(push.pushType) else {
            throw HeraldConfigurationError(field: "--push-type", message: "is alert, background or voip")
        }
        let background = push.pushType == "background"
        let high: Bool
        if let priority = push.priority {
            guard [10, 5, 1].contains(priority) else { throw HeraldConfigurationError(field: "--priority", message: "is 10, 5 or 1") }
            high = priority == 10 && !background
        } else {
            high = !background
        }
        let data: [String: String]
        if let json = push.payloadJSON {
            guard let parsed = try? JSONDecoder().decode([String: String].self, from: Data(json.utf8)) else {
                throw HeraldConfigurationError(field: "--payload-json", message: "is the FCM data map: a JSON object of strings")
            }
            data = parsed
        } else if background {
            data = [:]
        } else {
            data = ["title": push.title ?? "Herald", "body": push.body ?? "Test push from herald send"]
        }
        return FCMMessage(target: target, data: data, priority: high ? .high : .normal, ttlSeconds: nil, collapseKey: push.collapseID)
    }
}
