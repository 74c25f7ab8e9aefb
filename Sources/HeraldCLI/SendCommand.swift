import ArgumentParser
import Foundation
import HeraldApp
import HeraldCore
import HeraldHTTP2
import HeraldPushCore
import HeraldPushService
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
    @Option(help: "HTTP/2 connections to APNs.") var connections = 4

    func run() async throws {
        CLILogging.bootstrap()
        let registry = PushServiceRegistry.builtIn
        let push = DirectPush(
            token: token, tokenKind: tokenKind, title: title, body: body, payloadJSON: payloadJSON, pushType: pushType, priority: priority,
            collapseID: collapseID, environment: environment, connections: connections)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        let sender: any DirectSender
        do {
            if let n = `repeat`, n < 1 { throw HeraldConfigurationError(field: "--repeat", message: "is at least 1") }
            guard concurrency >= 1 else { throw HeraldConfigurationError(field: "--concurrency", message: "is at least 1") }
            guard connections >= 1 else { throw HeraldConfigurationError(field: "--connections", message: "is at least 1") }
            // The services that send one push directly (`herald send`): APNs and FCM.
            guard let service = registry.service(of: Platform(platform)),
                let made = try service.directSender(for: push, environment: ProcessInfo.processInfo.environment, eventLoopGroup: group)
            else { throw HeraldConfigurationError(field: "--platform", message: "is ios or android") }
            sender = made
        } catch let error as DirectPushRefusal {
            try await group.shutdownGracefully()
            throw CLIOutput.invalid(field: error.field, message: error.message, reason: error.reason)
        } catch let error as HeraldConfigurationError {
            try await group.shutdownGracefully()
            throw CLIOutput.invalid(field: error.field, message: error.message)
        }
        let allAccepted: Bool
        if let n = `repeat` {
            allAccepted = await sendRepeatedly(count: n, on: group) { await sender.send().outcome }
        } else {
            let result = await sender.send()
            CLIOutput.printJSON(result.report.mapValues { value -> Any in
                switch value {
                case .string(let text): text
                case .int(let number): number
                case .null: NSNull()
                }
            })
            allAccepted = result.outcome == .accepted
        }
        await sender.shutdown()
        try await group.shutdownGracefully()
        if !allAccepted { throw ExitCode(1) }
    }

    /// Sends `count` pushes, `send()` each, with `concurrency` in flight; prints the rate and the
    /// CPU time per push (so figures compare across machines).
    private func sendRepeatedly(
        count: Int, on group: MultiThreadedEventLoopGroup, send: @escaping @Sendable () async -> DirectSendResult.Outcome
    ) async -> Bool {
        let next = Counter()
        let start = ContinuousClock.now
        let cpuStart = ProcessCPU.seconds()
        let loops = Array(group.makeIterator())
        let tallies = await withTaskGroup(of: Tally.self) { group in
            // The senders run on the event loops, each resuming where its answer arrived.
            let executors = loops.map(EventLoopTaskExecutor.init)
            for index in 0..<min(concurrency, count) {
                group.addTask(executorPreference: executors[index % executors.count]) {
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

    mutating func add(_ outcome: DirectSendResult.Outcome) {
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
