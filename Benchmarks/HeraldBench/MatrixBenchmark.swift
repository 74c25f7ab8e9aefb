import ArgumentParser
import Foundation
import HeraldAPNsSimulator
import HeraldCore
import HeraldPushCore
import KasiaProtocol

/// `herald-bench matrix`: a Matrix homeserver's load on the push gateway. `--clients` concurrent
/// clients, each posting Synapse-shaped notifies (one device each, as Synapse sends them) one after
/// the other, as a homeserver's pushers do; each answer comes once the push is committed. Reports
/// notifies/s, Herald's CPU per notify (from `/proc`, not wall time), the answer's p99, and the
/// p99 from the notify's start to the APNs simulator's arrival (the simulator runs in this process),
/// and this process's own CPU per notify (the clients and the simulator share the machine's cores).
struct MatrixNotifies: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "matrix")
    @OptionGroup var rig: RigOptions
    @Option(help: "Notifies to send.") var notifies = 20_000
    @Option(help: "Concurrent homeserver-like clients.") var clients = 32
    @Option(help: "Distinct pushers (devices).") var devices = 1_000

    static func body(_ n: Int, devices: Int) -> String {
        let key = Data(Hex.decode(Rig.token(n % devices))!).base64EncodedString()
        return #"""
            {"notification":{"event_id":"$bench\#(n)","room_id":"!room\#(n % 97):bench.example","type":"m.room.message",\#
            "sender":"@alice:bench.example","sender_display_name":"Alice","room_name":"Bench room","prio":"high",\#
            "content":{"msgtype":"m.text","body":"message \#(n)"},"counts":{"unread":1},\#
            "devices":[{"app_id":"im.bench.ios","pushkey":"\#(key)","pushkey_ts":1700000000,"data":{}}]}}
            """#
    }

    func run() async throws {
        guard notifies >= 1, clients >= 1, devices >= 1 else { throw ValidationError("--notifies, --clients and --devices are at least 1") }
        try await Rig.with(heraldPath: self.rig.herald, postgresURL: self.rig.postgresURL) { rig in
            try await rig.launch(environment: ["HERALD_MATRIX_APPS": "im.bench.ios=apns"])
            // Warm-up: connections, the first JWT, every pusher's device admitted once.
            let warm = min(devices, 1_000)
            for n in 0..<warm { guard try await rig.post("/_matrix/push/v1/notify", Self.body(1_000_000_000 + n, devices: devices), publisher: false) == 200 else { throw BenchError("warm-up notify refused") } }
            guard try await rig.waitForAccepted(warm, timeout: .seconds(60)) else { throw BenchError("warm-up pushes did not arrive") }
            let cpuStart = try rig.cpuSeconds()
            let ownStart = try rig.ownCPUSeconds()
            let started = ContinuousClock.now
            let (clients, notifies, devices) = (self.clients, self.notifies, self.devices)
            // Each client's notifies: (n, when it started, in unix ms), its answer times, its refusals.
            typealias Sent = (starts: [(Int, Double)], answers: [Double], refused: Int)
            let results = try await withThrowingTaskGroup(of: Sent.self) { group in
                for client in 0..<clients {
                    group.addTask {
                        var sent: Sent = ([], [], 0)
                        for n in stride(from: client, to: notifies, by: clients) {
                            let body = Self.body(n, devices: devices)
                            let start = ContinuousClock.now
                            sent.starts.append((n, Date().timeIntervalSince1970 * 1000))
                            if try await rig.post("/_matrix/push/v1/notify", body, publisher: false) != 200 { sent.refused += 1 }
                            sent.answers.append((ContinuousClock.now - start).seconds * 1000)
                        }
                        return sent
                    }
                }
                return try await group.reduce(into: [Sent]()) { $0.append($1) }
            }
            let refused = results.reduce(0) { $0 + $1.refused }
            let seconds = (ContinuousClock.now - started).seconds
            let cpuAnswered = try rig.cpuSeconds() - cpuStart
            let complete = try await rig.waitForAccepted(warm + notifies, timeout: .seconds(600))
            let cpuTotal = try rig.cpuSeconds() - cpuStart
            let ownTotal = try rig.ownCPUSeconds() - ownStart
            var sent = [Double](repeating: 0, count: notifies)
            for result in results { for (n, at) in result.starts { sent[n] = at } }
            var arrival: [Double] = []
            for note in rig.simulator.notifications() {
                guard let range = note.payload.range(of: #""event_id":"$bench"#),
                    let n = Int(note.payload[range.upperBound...].prefix(while: \.isNumber)), n < notifies
                else { continue }
                arrival.append(Double(note.receivedAtMs) - sent[n])
            }
            arrival.sort()
            let answered = results.flatMap(\.answers).sorted()
            func ms(_ seconds: Double) -> Double { (seconds * 1000 / Double(notifies) * 1000).rounded() / 1000 }
            func round(_ v: Double) -> Double { (v * 10).rounded() / 10 }
            report([
                "benchmark": "matrix", "notifies": notifies, "clients": clients, "devices": devices, "refused": refused,
                "all_delivered": complete && arrival.count == notifies, "notifies_per_second": Int(Double(notifies) / seconds),
                "cpu_ms_per_notify_until_answer": ms(cpuAnswered), "cpu_ms_per_notify_total": ms(cpuTotal),
                // The same machine's cores also run the clients and the simulator: their share, measured the same way.
                "load_generator_cpu_ms_per_notify": ms(ownTotal),
                "answer_p50_ms": round(percentile(answered, 0.5)), "answer_p99_ms": round(percentile(answered, 0.99)),
                "notify_to_arrival_p50_ms": round(percentile(arrival, 0.5)), "notify_to_arrival_p99_ms": round(percentile(arrival, 0.99)),
            ])
        }
    }
}

