import ArgumentParser
import Foundation
import HeraldAPNsSimulator
import HeraldCore
import HeraldPushCore
import HeraldStore
import KaspaNodeSimulator
import KasiaProtocol

/// `herald-bench`: the gateway's benchmarks (README → Performance). Each runs a release
/// `herald serve` against a fresh SQLite file and an in-process APNs simulator, on loopback.
@main
struct HeraldBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-bench",
        abstract: "Gateway benchmarks: publish throughput, publish-to-APNs latency, fan-out, memory.",
        subcommands: [PublishThroughput.self, PublishLatency.self, FanOut.self, Memory.self, Cost.self, RouteLookup.self, KaspaClassify.self, KaspaLatency.self, WebPushThroughput.self, RetentionBenchmark.self, MatrixNotifies.self, SealingBenchmark.self, ReadMarkerBenchmark.self, H2Floor.self])
}

struct RigOptions: ParsableArguments {
    @Option(help: "The herald binary (a release build).")
    var herald = ".build/release/herald"
    @Option(name: .customLong("postgres-url"), help: "An empty PostgreSQL database (postgres://…) instead of a fresh SQLite file.")
    var postgresURL: String?
    @Option(help: "herald serve instances on the database (more than one needs --postgres-url); requests go round-robin.")
    var instances = 1
}

/// Durable publish throughput: events accepted per second through `/v1/events:batch`, one device each.
struct PublishThroughput: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "publish")
    @OptionGroup var rig: RigOptions
    @Option(help: "Registered devices; event i goes to device i mod devices.") var devices = 20_000
    @Option(help: "Events to publish.") var events = 60_000
    @Option(help: "Events per batch request (the 64 KiB body limit holds about 600).") var batch = 250
    @Option(help: "Batch requests in flight at once.") var concurrency = 4

    func run() async throws {
        try await Rig.with(heraldPath: self.rig.herald, postgresURL: rig.postgresURL, instances: rig.instances) { rig in
            try await rig.prefill(devices: devices) { .session("s\($0)") }
            try await rig.launch()
            let (devices, batch, events) = (devices, batch, events)
            let batches = stride(from: 0, to: events, by: batch).map { start in
                #"{"events":["# + (start..<min(events, start + batch)).map { Rig.customEvent(device: $0 % devices) }.joined(separator: ",") + "]}"
            }
            let started = ContinuousClock.now
            let refused = try await rig.postBatches(batches, concurrency: concurrency)
            let accepted = (ContinuousClock.now - started).seconds
            let delivered = try await rig.waitForAccepted(events, timeout: .seconds(600))
            let drained = (ContinuousClock.now - started).seconds
            report([
                "benchmark": "publish", "instances": rig.instances, "backend": rig.postgresURL == nil ? "sqlite" : "postgresql", "events": events, "batch": batch, "concurrency": concurrency,
                "refused_batches": refused, "accept_seconds": accepted, "events_per_second": Int(Double(events) / accepted),
                "all_delivered": delivered, "delivered_per_second": Int(Double(rig.simulator.stats.accepted) / drained),
            ])
        }
    }
}

/// End-to-end latency: single events published open-loop at a fixed rate, each to its own
/// device; latency runs from the moment an event was due to be sent to the push's arrival at
/// the simulator (so a stalled sender counts against it). 1 ms resolution.
struct PublishLatency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "latency")
    @OptionGroup var rig: RigOptions
    @Option(help: "Events per second.") var rate = 1_000
    @Option(help: "Seconds of measured load (after 2 s of warm-up).") var seconds = 10

    func run() async throws {
        let warmup = 2 * rate, measured = seconds * rate
        try await Rig.with(heraldPath: self.rig.herald) { rig in
            try await rig.prefill(devices: warmup + measured) { .session("s\($0)") }
            try await rig.launch()
            _ = try await rig.openLoop(rate: rate, devices: 0..<warmup)
            _ = try await rig.waitForAccepted(warmup, timeout: .seconds(60))
            let wallStart = Date().timeIntervalSince1970 * 1000
            let answers = try await rig.openLoop(rate: rate, devices: warmup..<(warmup + measured))
            let refused = answers.filter { !$0.accepted }.count
            let answered = answers.map(\.milliseconds).sorted()
            let complete = try await rig.waitForAccepted(warmup + measured, timeout: .seconds(120))
            var latencies: [Double] = []
            for n in rig.simulator.notifications() {
                guard let i = Int(n.token, radix: 16), i >= warmup else { continue }
                let due = wallStart + Double(i - warmup) * 1000 / Double(rate)
                latencies.append(Double(n.receivedAtMs) - due)
            }
            latencies.sort()
            report([
                "benchmark": "latency", "rate": rate, "events": measured, "refused": refused, "arrived": latencies.count,
                "all_arrived": complete, "p50_ms": tenths(percentile(latencies, 0.5)), "p99_ms": tenths(percentile(latencies, 0.99)),
                "max_ms": tenths(latencies.last ?? .nan),
                "publish_p50_ms": tenths(percentile(answered, 0.5)), "publish_p99_ms": tenths(percentile(answered, 0.99)),
            ])
        }
    }

    private func tenths(_ ms: Double) -> Double { (ms * 10).rounded() / 10 }
}

/// One event to every device watching one key (SPEC §16), the devices moved in with `herald devices
/// import`: the publish's 202, the first push at the simulator, every push exactly once, Herald's peak
/// resident memory and CPU per pushed device, and an event to another key published half way,
/// timed from its 202 to its push. `--kill-at-half` kills `herald serve` with SIGKILL half way and
/// starts it again on the same database: every device still gets the event, and the report says
/// how many got it twice.
struct FanOut: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "fanout")
    @OptionGroup var rig: RigOptions
    @Option(help: "Devices watching the key.") var devices = 1_000_000
    @Flag(help: "Every device has push keys: every push is sealed to it.") var sealed = false
    @Flag(help: "SIGKILL herald serve when half the pushes arrived, then start it again.") var killAtHalf = false
    @Flag(help: "The event comes from the chain: a Kasia message in a block of the node simulator, whose sender every device watches.")
    var chain = false
    @Flag(help: "Send one fan-out event to every device first, unmeasured: sealing keys made, caches warm (the steady state).") var warm = false
    @Option(help: "The SDK fixtures (node JSON), with --chain.") var fixtures = "Tests/HeraldKaspaTests/Fixtures/kasia_transactions.json"

    func run() async throws {
        let f = chain ? try KaspaFixtures(path: fixtures) : nil
        let node = chain ? try await KaspaNodeSimulator.start() : nil
        defer { if let node { Task { await node.shutdown() } } }
        try await Rig.with(heraldPath: self.rig.herald, postgresURL: rig.postgresURL) { rig in
            let prefillStart = ContinuousClock.now
            let fan: WatchKey = try f.map { .kaspaAddress(try KaspaAddress($0.alice)) } ?? .session("fan")
            // One more device, watching another key: the event published mid-fan-out.
            try await rig.importDevices(devices + 1, sealed: sealed) { $0 < devices ? [fan] : [.session("other")] }
            let prefillSeconds = (ContinuousClock.now - prefillStart).seconds
            // Killed half way, the deliveries leased at the crash come back after their lease: a
            // short one, waited out before the pushes are counted, so no late duplicate is missed.
            let lease = 15
            var environment = node.map { ["HERALD_KASPA_WRPC_URL": $0.url] } ?? [:]
            if killAtHalf { environment["HERALD_OUTBOX_LEASE_SECONDS"] = "\(lease)" }
            try await rig.launch(environment: environment)
            if node != nil {
                for _ in 0..<200 {
                    if (try await rig.getAdminJSON("/v1/stats")["kaspa"] as? [String: Any])?["connected"] as? Bool == true { break }
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
            if warm {
                guard try await rig.post(
                    "/v1/events", #"{"template":"custom","targets":{"keys":["\#(fan.description)"]},"fields":{"aps":{"alert":"warm-up"}}}"#) == 202,
                    try await rig.waitForAccepted(devices, timeout: .seconds(1_800))
                else { throw BenchError("the warm-up fan-out did not arrive") }
                try await Task.sleep(for: .seconds(2))
                rig.simulator.reset()
            }
            let idle = try rig.memory()
            let cpuStart = try rig.cpuSeconds()
            let started = ContinuousClock.now
            var accepted = 0.0
            if let node, let f {
                // The block's commit (its checkpoint with the job) is not seen from outside: the first push bounds it.
                let tx = KaspaFixtures.renamed(f.message, 0)
                await node.produce([tx], senders: [(tx["verboseData"] as! [String: Any])["transactionId"] as! String: f.alice])
            } else {
                let status = try await rig.post(
                    "/v1/events", #"{"template":"custom","targets":{"keys":["session:fan"]},"fields":{"aps":{"alert":"to all"}}}"#)
                accepted = (ContinuousClock.now - started).seconds
                guard status == 202 else { throw BenchError("the fan-out event was refused: \(status)") }
            }
            _ = try await rig.waitForAccepted(1, timeout: .seconds(60))
            let firstPush = (ContinuousClock.now - started).seconds
            _ = try await rig.waitForAccepted(devices / 2, timeout: .seconds(1_200))
            var peak = try rig.memory().peak
            var cpuBeforeKill = 0.0
            if killAtHalf {
                cpuBeforeKill = try rig.cpuSeconds() - cpuStart
                peak = max(peak, try rig.memory().peak)
                rig.killAll()
                try await rig.launch(environment: environment)
            }
            // Mid-fan-out (after the restart, with --kill-at-half): an event to another key, timed
            // from its 202 to its push.
            let otherToken = Rig.token(devices)
            let otherStarted = ContinuousClock.now
            guard try await rig.post("/v1/events", #"{"template":"custom","targets":{"keys":["session:other"]},"fields":{"aps":{"alert":"meanwhile"}}}"#) == 202
            else { throw BenchError("the second event was refused") }
            var otherSeconds: Double?
            let deadline = ContinuousClock.now + .seconds(1_800)
            while ContinuousClock.now < deadline {
                if otherSeconds == nil, !rig.simulator.notifications(token: otherToken).isEmpty {
                    otherSeconds = (ContinuousClock.now - otherStarted).seconds
                }
                if rig.simulator.stats.accepted >= devices + 1 { break }
                peak = max(peak, try rig.memory().peak)
                try await Task.sleep(for: .milliseconds(otherSeconds == nil ? 5 : 200))
            }
            if otherSeconds == nil, !rig.simulator.notifications(token: otherToken).isEmpty { otherSeconds = (ContinuousClock.now - otherStarted).seconds }
            let delivered = (ContinuousClock.now - started).seconds
            // Let any late duplicate arrive before counting (after a kill: those leased at the crash).
            try await Task.sleep(for: .seconds(killAtHalf ? lease + 3 : 2))
            let cpu = cpuBeforeKill + (try rig.cpuSeconds()) - (killAtHalf ? 0 : cpuStart)
            peak = max(peak, try rig.memory().peak)
            let recorded = rig.simulator.notifications().filter { $0.token != otherToken }
            let distinct = Set(recorded.map(\.token)).count
            func round3(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }
            report([
                "benchmark": "fanout", "store": rig.postgresURL == nil ? "sqlite" : "postgresql", "devices": devices, "sealed": sealed,
                "killed_at_half": killAtHalf, "warm": warm, "prefill_seconds": Int(prefillSeconds), "source": chain ? "chain" : "api",
                "accepted_ms": chain ? -1 : round3(accepted * 1000), "first_push_ms": round3(firstPush * 1000),
                "delivered_seconds": round3(delivered), "pushes_per_second": Int(Double(recorded.count) / delivered),
                "devices_reached": distinct, "pushes": recorded.count, "duplicates": recorded.count - distinct, "missing": devices - distinct,
                "other_event_ms": otherSeconds.map { round3($0 * 1000) } ?? -1,
                "idle_rss_mib": idle.rss / 1024, "peak_rss_mib": peak / 1024,
                "cpu_ms_per_device": round3(cpu * 1000 / Double(devices)),
            ])
        }
    }
}

/// Memory: the resident size of `herald serve` with many registered devices, idle and after work.
struct Memory: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "memory")
    @OptionGroup var rig: RigOptions
    @Option(help: "Registered devices.") var devices = 1_000_000
    @Option(help: "Registrations and events sent through the API after start.") var work = 10_000

    func run() async throws {
        try await Rig.with(heraldPath: self.rig.herald) { rig in
            let prefillStart = ContinuousClock.now
            try await rig.prefill(devices: devices) { .session("s\($0)") }
            let prefill = (ContinuousClock.now - prefillStart).seconds
            try await rig.launch()
            try await Task.sleep(for: .seconds(2))
            let idle = try rig.memory()
            // Registrations, then events to devices spread over the whole table.
            let work = work
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        for i in stride(from: worker, to: work, by: 8) {
                            _ = try await rig.post("/v1/push/register", #"{"device_token":"\#(Rig.token(devices + i))","platform":"ios","watched_addresses":["session:w\#(i)"]}"#, publisher: false)
                        }
                    }
                }
                try await group.waitForAll()
            }
            for start in stride(from: 0, to: work, by: 250) {
                let body = #"{"events":["# + (start..<min(work, start + 250)).map {
                    Rig.customEvent(device: ($0 * 7_919) % devices)
                }.joined(separator: ",") + "]}"
                _ = try await rig.post("/v1/events:batch", body)
            }
            let complete = try await rig.waitForAccepted(work, timeout: .seconds(300))
            let busy = try rig.memory()
            report([
                "benchmark": "memory", "devices": devices, "prefill_seconds": prefill, "idle_rss_mib": idle.rss / 1024,
                "after_work_rss_mib": busy.rss / 1024, "peak_rss_mib": busy.peak / 1024, "work": work, "all_delivered": complete,
            ])
        }
    }
}

/// Route lookup: the store query that finds the devices watching a key, with 1,000,000 devices
/// × 10 watch keys (10,000,000 keys), timed in this process straight on the store.
struct RouteLookup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "route-lookup")
    @OptionGroup var rig: RigOptions
    @Option(help: "Registered devices.") var devices = 1_000_000
    @Option(help: "Watch keys per device.") var keys = 10
    @Option(help: "Lookups to time (random keys, one device each).") var lookups = 10_000
    @Flag(help: "The database already holds the devices (device i watches session:d<i>k<0…keys-1>).") var prefilled = false

    func run() async throws {
        try await Rig.with(heraldPath: self.rig.herald, postgresURL: rig.postgresURL) { rig in
            let (devices, keys, lookups) = (devices, keys, lookups)
            let filled = ContinuousClock.now
            if !prefilled {
                try await rig.prefill(devices: devices, watchingAll: { i in (0..<keys).map { .session("d\(i)k\($0)") } })
            }
            let fillSeconds = (ContinuousClock.now - filled).seconds
            let (samples, found) = try await rig.withStore { store in
                var samples: [Double] = []
                var found = 0
                var rng = SystemRandomNumberGenerator()
                for n in 0..<(lookups + 500) {
                    let key = "session:d\(Int.random(in: 0..<devices, using: &rng))k\(Int.random(in: 0..<keys, using: &rng))"
                    let started = ContinuousClock.now
                    let matched = try await store.devices(app: "default", watching: key)
                    let elapsed = (ContinuousClock.now - started).seconds * 1_000
                    if n >= 500 {  // after warm-up
                        samples.append(elapsed)
                        found += matched.count
                    }
                }
                return (samples.sorted(), found)
            }
            report([
                "benchmark": "route-lookup", "backend": rig.postgresURL == nil ? "sqlite" : "postgresql", "devices": devices,
                "watch_keys": devices * keys, "lookups": lookups, "devices_found": found, "fill_seconds": Int(fillSeconds),
                "p50_ms": percentile(samples, 0.5), "p99_ms": percentile(samples, 0.99), "max_ms": samples.last ?? 0,
            ])
        }
    }
}
