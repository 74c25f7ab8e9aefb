import ArgumentParser
import Foundation
import HeraldAPNs
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// `herald send`: one push, or a measured burst with `--repeat`.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Send a push through APNs (or a simulator) with the HERALD_APNS_* settings.")

    @Option(help: "The device token, hex.") var token: String
    @Option(help: "Alert title.") var title: String?
    @Option(help: "Alert body.") var body: String?
    @Option(name: .customLong("payload-json"), help: "The whole payload as JSON (instead of --title/--body).")
    var payloadJSON: String?
    @Option(name: .customLong("push-type"), help: "alert, background or voip.") var pushType = "alert"
    @Option(help: "10, 5 or 1 (default 10; 5 for background).") var priority: Int?
    @Option(name: .customLong("collapse-id"), help: "apns-collapse-id.") var collapseID: String?
    @Option(help: "sandbox or production (default HERALD_APNS_ENVIRONMENT).") var environment: String?
    @Option(help: "Send the push N times and report the rate.") var `repeat`: Int?
    @Option(help: "Pushes in flight at once with --repeat.") var concurrency = 100
    @Option(help: "HTTP/2 connections to APNs.") var connections = 2

    func run() async throws {
        CLILogging.bootstrap()
        let notification: APNsNotification
        let settings: APNsSettings
        let key: APNsSigningKey
        var environmentOverride: APNsEnvironment?
        do {
            guard let loaded = try APNsSettings.fromEnvironment(ProcessInfo.processInfo.environment) else {
                throw InvalidInput(field: "HERALD_APNS_KEY_PATH", message: "set the HERALD_APNS_* credentials")
            }
            settings = loaded
            key = try settings.loadSigningKey()
            if let environment {
                guard let parsed = APNsEnvironment(rawValue: environment) else {
                    throw InvalidInput(field: "--environment", message: "is sandbox or production")
                }
                environmentOverride = parsed
            }
            notification = try makeNotification(topic: settings.topic)
            try notification.validate()
            if let n = `repeat`, n < 1 { throw InvalidInput(field: "--repeat", message: "is at least 1") }
            guard concurrency >= 1 else { throw InvalidInput(field: "--concurrency", message: "is at least 1") }
            guard connections >= 1 else { throw InvalidInput(field: "--connections", message: "is at least 1") }
        } catch let error as APNsValidationError {
            throw CLIOutput.invalid(field: error.field, message: error.message, reason: error.reason.rawValue)
        } catch let error as APNsConfigurationError {
            throw CLIOutput.invalid(field: error.field, message: error.message)
        } catch let error as InvalidInput {
            throw CLIOutput.invalid(field: error.field, message: error.message)
        }

        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        var clientConfiguration = settings.clientConfiguration(environment: environmentOverride)
        clientConfiguration.connections = connections
        let client = try APNsClient(
            configuration: clientConfiguration, tokens: APNsProviderTokenSource(key: key), eventLoopGroup: group,
            logger: Logger(label: "herald.apns"))
        let allAccepted: Bool
        if let n = `repeat` {
            allAccepted = await sendRepeatedly(client: client, notification: notification, count: n)
        } else {
            allAccepted = await sendOnce(client: client, notification: notification)
        }
        await client.shutdown()
        try await group.shutdownGracefully()
        if !allAccepted { throw ExitCode(1) }
    }

    private func makeNotification(topic: String) throws -> APNsNotification {
        guard let type = APNsPushType(rawValue: pushType), [.alert, .background, .voip].contains(type) else {
            throw InvalidInput(field: "--push-type", message: "is alert, background or voip")
        }
        let resolvedPriority: APNsPriority
        if let priority {
            guard let p = APNsPriority(rawValue: priority) else { throw InvalidInput(field: "--priority", message: "is 10, 5 or 1") }
            resolvedPriority = p
        } else {
            resolvedPriority = type == .background ? .considerate : .immediate
        }
        let payload: Data
        if let payloadJSON {
            payload = Data(payloadJSON.utf8)
        } else {
            var aps: [String: Any]
            switch type {
            case .background: aps = ["content-available": 1]
            default: aps = ["alert": ["title": title ?? "Herald", "body": body ?? "Test push from herald send"], "sound": "default"]
            }
            if type == .voip { aps = [:] }
            var object: [String: Any] = ["aps": aps]
            if type == .voip { object["herald"] = ["title": title ?? "Herald", "body": body ?? "Test push"] }
            payload = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        }
        let resolvedTopic = type == .voip && !topic.hasSuffix(".voip") ? topic + ".voip" : topic
        return APNsNotification(
            deviceToken: token.lowercased(), topic: resolvedTopic, pushType: type, priority: resolvedPriority,
            collapseID: collapseID, payload: Array(payload))
    }

    private func sendOnce(client: APNsClient, notification: APNsNotification) async -> Bool {
        let result = await client.sendValidated(notification)
        switch result {
        case .accepted(let id):
            CLIOutput.printJSON(["status": "accepted", "apns_id": id.uuidString.lowercased()])
            return true
        case .rejected(let status, let reason, let timestamp, _):
            var out: [String: Any] = ["status": "rejected", "http_status": status, "reason": reason.rawValue]
            out["timestamp"] = timestamp.map { Int64($0.timeIntervalSince1970 * 1000) } ?? NSNull()
            CLIOutput.printJSON(out)
            return false
        case .transportFailure(let failure):
            CLIOutput.printJSON(["status": "failed", "error": failure.description])
            return false
        }
    }

    /// Sends `count` copies (each with its own apns-id) with `concurrency` in flight.
    private func sendRepeatedly(client: APNsClient, notification: APNsNotification, count: Int) async -> Bool {
        let next = Counter()
        let start = ContinuousClock.now
        let tallies = await withTaskGroup(of: Tally.self) { group in
            for _ in 0..<min(concurrency, count) {
                group.addTask { [notification] in
                    var tally = Tally()
                    var n = notification
                    while next.take() < count {
                        n.apnsID = UUID()
                        tally.add(await client.sendValidated(n))
                    }
                    return tally
                }
            }
            var total = Tally()
            for await t in group { total.merge(t) }
            return total
        }
        let seconds = (ContinuousClock.now - start).seconds
        var out: [String: Any] = [
            "sent": count, "accepted": tallies.accepted, "rejected": tallies.rejected,
            "seconds": (seconds * 1000).rounded() / 1000,
            "per_second": Int((Double(count) / max(seconds, 1e-9)).rounded()),
        ]
        if !tallies.failed.isEmpty { out["failed"] = tallies.failed }
        CLIOutput.printJSON(out)
        return tallies.accepted == count
    }
}

/// Hands out sequence numbers to the sending tasks.
private final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func take() -> Int { value.add(1, ordering: .relaxed).oldValue }
}

private struct Tally: Sendable {
    var accepted = 0
    var rejected: [String: Int] = [:]
    var failed: [String: Int] = [:]

    mutating func add(_ result: APNsResult) {
        switch result {
        case .accepted: accepted += 1
        case .rejected(_, let reason, _, _): rejected[reason.rawValue, default: 0] += 1
        case .transportFailure(let f): failed[f.description, default: 0] += 1
        }
    }

    mutating func merge(_ other: Tally) {
        accepted += other.accepted
        rejected.merge(other.rejected, uniquingKeysWith: +)
        failed.merge(other.failed, uniquingKeysWith: +)
    }
}
