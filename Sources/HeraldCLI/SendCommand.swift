import ArgumentParser
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldApp
import HeraldFCM
import HeraldPushCore
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// `herald send`: one push, or a measured burst with `--repeat`.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send",
        abstract: "Send a push through APNs with the HERALD_APNS_* settings, or FCM (--platform android) with HERALD_FCM_*; or a simulator.")

    @Option(help: "ios (APNs) or android (FCM).") var platform = "ios"
    @Option(help: "The device token: APNs hex, or an FCM registration token.") var token: String
    @Option(name: .customLong("token-kind"), help: "android: token, or fid for a Firebase Installation ID.") var tokenKind = "token"
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
        switch platform {
        case "ios": try await runAPNs()
        case "android": try await runFCM()
        default: throw CLIOutput.invalid(field: "--platform", message: "is ios or android")
        }
    }

    private func runAPNs() async throws {
        let notification: APNsNotification
        let settings: APNsSettings
        let key: APNsSigningKey
        var environmentOverride: APNsEnvironment?
        do {
            guard let loaded = try APNsSettings.fromEnvironment(ProcessInfo.processInfo.environment) else {
                throw HeraldConfigurationError(field: "HERALD_APNS_KEY_PATH", message: "set the HERALD_APNS_* credentials")
            }
            settings = loaded
            key = try settings.loadSigningKey()
            if let environment {
                guard let parsed = APNsEnvironment(rawValue: environment) else {
                    throw HeraldConfigurationError(field: "--environment", message: "is sandbox or production")
                }
                environmentOverride = parsed
            }
            notification = try makeNotification(topic: settings.topic)
            try notification.validate()
            if let n = `repeat`, n < 1 { throw HeraldConfigurationError(field: "--repeat", message: "is at least 1") }
            guard concurrency >= 1 else { throw HeraldConfigurationError(field: "--concurrency", message: "is at least 1") }
            guard connections >= 1 else { throw HeraldConfigurationError(field: "--connections", message: "is at least 1") }
        } catch let error as APNsValidationError {
            throw CLIOutput.invalid(field: error.field, message: error.message, reason: error.reason.rawValue)
        } catch let error as HeraldConfigurationError {
            throw CLIOutput.invalid(field: error.field, message: error.message)
        } catch let error as HeraldConfigurationError {
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
            allAccepted = await sendRepeatedly(count: n) {
                var copy = notification
                copy.apnsID = UUID()
                return SendOutcome(await client.sendValidated(copy))
            }
        } else {
            allAccepted = await sendOnce(client: client, notification: notification)
        }
        await client.shutdown()
        try await group.shutdownGracefully()
        if !allAccepted { throw ExitCode(1) }
    }

    /// `--platform android`: one data-only FCM message (title and body as data, as Herald sends
    /// them), through the HERALD_FCM_* service account.
    private func runFCM() async throws {
        let settings: FCMSettings
        let message: FCMMessage
        do {
            guard let loaded = try FCMSettings.fromEnvironment(ProcessInfo.processInfo.environment) else {
                throw HeraldConfigurationError(field: "HERALD_FCM_CREDENTIALS_FILE", message: "set the HERALD_FCM_* credentials")
            }
            settings = loaded
            message = try makeMessage()
            try message.validate()
            if let n = `repeat`, n < 1 { throw HeraldConfigurationError(field: "--repeat", message: "is at least 1") }
            guard concurrency >= 1 else { throw HeraldConfigurationError(field: "--concurrency", message: "is at least 1") }
            guard connections >= 1 else { throw HeraldConfigurationError(field: "--connections", message: "is at least 1") }
        } catch let error as FCMValidationError {
            throw CLIOutput.invalid(field: error.field, message: error.reason)
        } catch let error as HeraldConfigurationError {
            throw CLIOutput.invalid(field: error.field, message: error.message)
        } catch let error as HeraldConfigurationError {
            throw CLIOutput.invalid(field: error.field, message: error.message)
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        var configuration = settings.clientConfiguration
        configuration.connections = connections
        let client: FCMClient
        do {
            client = try FCMClient(
                configuration: configuration, account: settings.account, projectID: settings.projectID, eventLoopGroup: group,
                logger: Logger(label: "herald.fcm"))
        } catch let error as HeraldConfigurationError {
            try await group.shutdownGracefully()
            throw CLIOutput.invalid(field: error.field, message: error.message)
        }
        let allAccepted: Bool
        if let n = `repeat` {
            allAccepted = await sendRepeatedly(count: n) {
                do { return SendOutcome(try await client.send(message)) } catch { return .failed("\(error)") }
            }
        } else {
            let result: FCMResult
            do { result = try await client.send(message) } catch { result = .transportFailure("\(error)") }
            switch result {
            case .accepted(let name): CLIOutput.printJSON(["status": "accepted", "name": name])
            case .rejected(let answer):
                CLIOutput.printJSON(["status": "rejected", "http_status": answer.httpStatus, "reason": answer.reason, "message": answer.message ?? NSNull()])
            case .transportFailure(let text): CLIOutput.printJSON(["status": "failed", "error": text])
            }
            allAccepted = if case .accepted = result { true } else { false }
        }
        await client.shutdown()
        try await group.shutdownGracefully()
        if !allAccepted { throw ExitCode(1) }
    }

    private func makeMessage() throws -> FCMMessage {
        let target: FCMMessage.Target
        switch tokenKind {
        case "token": target = .token(token)
        case "fid": target = .fid(token)
        default: throw HeraldConfigurationError(field: "--token-kind", message: "is token or fid")
        }
        guard let type = APNsPushType(rawValue: pushType), [.alert, .background, .voip].contains(type) else {
            throw HeraldConfigurationError(field: "--push-type", message: "is alert, background or voip")
        }
        let high: Bool
        if let priority {
            guard [10, 5, 1].contains(priority) else { throw HeraldConfigurationError(field: "--priority", message: "is 10, 5 or 1") }
            high = priority == 10 && type != .background
        } else {
            high = type != .background
        }
        let data: [String: String]
        if let payloadJSON {
            guard let parsed = try? JSONDecoder().decode([String: String].self, from: Data(payloadJSON.utf8)) else {
                throw HeraldConfigurationError(field: "--payload-json", message: "is the FCM data map: a JSON object of strings")
            }
            data = parsed
        } else if type == .background {
            data = [:]
        } else {
            data = ["title": title ?? "Herald", "body": body ?? "Test push from herald send"]
        }
        return FCMMessage(target: target, data: data, priority: high ? .high : .normal, ttlSeconds: nil, collapseKey: collapseID)
    }

    private func makeNotification(topic: String) throws -> APNsNotification {
        guard let type = APNsPushType(rawValue: pushType), [.alert, .background, .voip].contains(type) else {
            throw HeraldConfigurationError(field: "--push-type", message: "is alert, background or voip")
        }
        let resolvedPriority: APNsPriority
        if let priority {
            guard let p = APNsPriority(rawValue: priority) else { throw HeraldConfigurationError(field: "--priority", message: "is 10, 5 or 1") }
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

    /// Sends `count` pushes, `send()` each, with `concurrency` in flight; prints the rate and the
    /// CPU time per push (so figures compare across machines).
    private func sendRepeatedly(count: Int, send: @escaping @Sendable () async -> SendOutcome) async -> Bool {
        let next = Counter()
        let start = ContinuousClock.now
        let cpuStart = ProcessCPU.seconds()
        let tallies = await withTaskGroup(of: Tally.self) { group in
            for _ in 0..<min(concurrency, count) {
                group.addTask {
                    var tally = Tally()
                    while next.take() < count { tally.add(await send()) }
                    return tally
                }
            }
            var total = Tally()
            for await t in group { total.merge(t) }
            return total
        }
        let seconds = (ContinuousClock.now - start).seconds
        let cpu = ProcessCPU.seconds() - cpuStart
        var out: [String: Any] = [
            "sent": count, "accepted": tallies.accepted, "rejected": tallies.rejected,
            "seconds": (seconds * 1000).rounded() / 1000,
            "per_second": Int((Double(count) / max(seconds, 1e-9)).rounded()),
            "cpu_us_per_push": (cpu / Double(count) * 1e6 * 10).rounded() / 10,
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

/// One push's result, whichever the service.
enum SendOutcome: Sendable {
    case accepted
    case rejected(reason: String)
    case failed(String)

    init(_ result: APNsResult) {
        switch result {
        case .accepted: self = .accepted
        case .rejected(_, let reason, _, _): self = .rejected(reason: reason.rawValue)
        case .transportFailure(let f): self = .failed(f.description)
        }
    }

    init(_ result: FCMResult) {
        switch result {
        case .accepted: self = .accepted
        case .rejected(let answer): self = .rejected(reason: answer.reason)
        case .transportFailure(let text): self = .failed(text)
        }
    }
}

/// This process's CPU time (user + system), in seconds.
enum ProcessCPU {
    static func seconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return s(usage.ru_utime) + s(usage.ru_stime)
    }
}

private struct Tally: Sendable {
    var accepted = 0
    var rejected: [String: Int] = [:]
    var failed: [String: Int] = [:]

    mutating func add(_ outcome: SendOutcome) {
        switch outcome {
        case .accepted: accepted += 1
        case .rejected(let reason): rejected[reason, default: 0] += 1
        case .failed(let text): failed[text, default: 0] += 1
        }
    }

    mutating func merge(_ other: Tally) {
        accepted += other.accepted
        rejected.merge(other.rejected, uniquingKeysWith: +)
        failed.merge(other.failed, uniquingKeysWith: +)
    }
}
