import ArgumentParser
import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldPushCore
import HeraldStore

/// `herald-bench read-markers`: Herald's own CPU time per read marker (`POST /v1/push/read`)
/// whose user has two other devices: the marker's proof and its durable record before the 202,
/// then the two dismissals committed, signed (sealed with `--sealed`) and sent to the simulator.
/// Each marker is a different user's, so every dismissal goes out at once (none waits for a window).
struct ReadMarkerBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "read-markers")
    @OptionGroup var rig: RigOptions
    @Option(help: "Markers to post, each from a different user's first device.") var markers = 2_000
    @Option(help: "Markers in flight at once.") var concurrency = 16
    @Flag(help: "Devices with push_keys: every dismissal is sealed to its device (RFC 8291).") var sealed = false

    func run() async throws {
        let warm = 100
        let users = markers + warm
        try await Rig.with(heraldPath: self.rig.herald, postgresURL: rig.postgresURL, instances: rig.instances) { rig in
            // Three devices per user, one `device_id` (the identity the bearer and open policies go by).
            let sealed = sealed
            try await rig.withStore { store in
                for start in stride(from: 0, to: users * 3, by: 9_000) {
                    let batch = try (start..<min(users * 3, start + 9_000)).map { i in
                        Registration(
                            app: "default", token: try APNsTokenRule().token(Rig.token(i)),
                            attributes: sealed ? try Rig.sealedAttributes() : DeviceAttributes(production: false), deviceID: "user-\(i / 3)",
                            watchSet: .empty)
                    }
                    _ = try await store.register(batch, now: Date())
                }
            }
            try await rig.launch()
            @Sendable func mark(_ user: Int) async throws -> Bool {
                let body = #"{"device_token":"\#(Rig.token(user * 3))","conversation":"room-\#(user)","up_to":"\#(user)","issued_at":\#(Int64(Date().timeIntervalSince1970))}"#
                return try await rig.post("/v1/push/read", body, publisher: false) == 202
            }
            for user in markers..<users { _ = try await mark(user) }
            guard try await rig.waitForAccepted(warm * 2, timeout: .seconds(60)) else { throw BenchError("warm-up dismissals did not arrive") }
            let cpuStart = try rig.cpuSeconds()
            let started = ContinuousClock.now
            let refused = try await withThrowingTaskGroup(of: Int.self) { group in
                for worker in 0..<concurrency {
                    group.addTask {
                        var refused = 0
                        for user in stride(from: worker, to: markers, by: concurrency) where try await !mark(user) { refused += 1 }
                        return refused
                    }
                }
                return try await group.reduce(0, +)
            }
            let acceptSeconds = (ContinuousClock.now - started).seconds
            let cpuAccepted = try rig.cpuSeconds() - cpuStart
            let complete = try await rig.waitForAccepted(warm * 2 + markers * 2, timeout: .seconds(600))
            let cpuTotal = try rig.cpuSeconds() - cpuStart
            func ms(_ seconds: Double) -> Double { (seconds * 1_000 / Double(markers) * 1_000).rounded() / 1_000 }
            report([
                "benchmark": "read-markers", "backend": rig.postgresURL == nil ? "sqlite" : "postgresql", "sealed": sealed, "markers": markers,
                "siblings_per_marker": 2, "concurrency": concurrency, "refused": refused, "all_delivered": complete,
                "markers_per_second": Int(Double(markers) / acceptSeconds),
                "cpu_ms_per_marker_until_202": ms(cpuAccepted), "cpu_ms_per_marker_total": ms(cpuTotal),
            ])
        }
    }
}
