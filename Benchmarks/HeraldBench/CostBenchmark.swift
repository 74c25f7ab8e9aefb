import ArgumentParser
import Foundation
import HeraldCore
import HeraldPushCore

/// `herald-bench cost`: Herald's own CPU time per event (read from `/proc`, not wall time), for
/// single-event publishes at a fixed open-loop rate, batches of 250, and fan-out to 1,000
/// devices; each until the last 202 and until the simulator (in this process, not Herald's)
/// accepted every push. Delivery runs while publishing, so "until 202" includes the deliveries
/// done by then; "total" is the whole cost of an event. `--sealed` registers every device again
/// through the API with `push_keys`, as HeraldKit does, and reports that CPU per registration
/// apart: a registration makes its device's sealing key (the ECDH), its pushes then use it.
struct Cost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "cost")
    @OptionGroup var rig: RigOptions
    @Option(help: "single, batch or fanout.") var scenario = "single"
    @Option(help: "single: events per second (open loop).") var rate = 500
    @Option(help: "Events to publish (fanout: events of --fan-out deliveries each).") var events = 5_000
    @Flag(help: "Devices registered through the API with push_keys: every push is sealed to its device (RFC 8291).") var sealed = false
    @Option(help: "fanout: devices per event.") var fanOut = 1_000
    @Option(help: "herald serve's HERALD_FANOUT_THRESHOLD (fanout: 0 sends every event through a fan-out job).") var fanoutThreshold: Int?
    @Option(help: "perf samples of herald serve while publishing, into this file (Benchmarks/perf-stages.py groups them).") var perf: String?
    @Flag(help: "Report herald serve's syscalls, WAL syncs and context switches per event (perf stat, kernel tracepoints).") var counts = false
    @Flag(help: "herald serve runs under callgrind with its instrumentation off (Benchmarks/instructions.sh's --herald): turn it on for the measured events and dump their instructions once every push arrived.") var callgrind = false

    func run() async throws {
        guard ["single", "batch", "fanout"].contains(scenario) else { throw ValidationError("--scenario is single, batch or fanout") }
        guard rate >= 1, events >= 1 else { throw ValidationError("--rate and --events are at least 1") }
        let fanOut = self.fanOut
        try await Rig.with(heraldPath: self.rig.herald) { rig in
            let devices = scenario == "fanout" ? fanOut : events
            let watch: @Sendable (Int) -> WatchKey = { scenario == "fanout" ? .session("all") : .session("s\($0)") }
            try await rig.prefill(devices: devices, watching: watch)
            try await rig.launch(environment: fanoutThreshold.map { ["HERALD_FANOUT_THRESHOLD": "\($0)"] } ?? [:])
            var registrationCPU: Double?
            if sealed {
                let start = try rig.cpuSeconds()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<8 {
                        group.addTask {
                            for i in stride(from: worker, to: devices, by: 8) {
                                let keys = Rig.pushKeys()
                                let body = #"{"device_token":"\#(Rig.token(i))","platform":"ios","watched_addresses":["\#(watch(i).description)"],"push_keys":{"p256dh":"\#(keys.p256dh)","auth":"\#(keys.auth)"}}"#
                                guard try await rig.post("/v1/push/register", body, publisher: false) == 200 else { throw BenchError("a registration was refused") }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                registrationCPU = try rig.cpuSeconds() - start
            }
            // Warm up (connections, JIT-free but lazy allocations, the first JWT): 200 pushes.
            for i in 0..<200 { _ = try await rig.post("/v1/events", Rig.customEvent(device: i % (scenario == "fanout" ? fanOut : events))) }
            let warm = 200
            guard try await rig.waitForAccepted(warm, timeout: .seconds(60)) else { throw BenchError("warm-up pushes did not arrive") }
            let pushes = scenario == "fanout" ? events * fanOut : events
            let sealingStart = (try await rig.metric("herald_sealing_cpu_seconds_total"), try await rig.metric("herald_signed_pushes_total"))
            let observer = perf != nil || counts ? try await rig.observe(samples: perf, counts: counts) : nil
            if callgrind { try rig.callgrindControl("--instr=on") }
            let cpuStart = try rig.cpuSeconds()
            let started = ContinuousClock.now
            var answers: [Double] = []
            var refused = 0
            switch scenario {
            case "single":
                let results = try await rig.openLoop(rate: rate, devices: 0..<events)
                answers = results.map(\.milliseconds)
                refused = results.filter { !$0.accepted }.count
            case "batch":
                let batches = stride(from: 0, to: events, by: 250).map { start in
                    #"{"events":["# + (start..<min(events, start + 250)).map { Rig.customEvent(device: $0) }.joined(separator: ",") + "]}"
                }
                refused = try await rig.postBatches(batches, concurrency: 4)
            default:
                for n in 0..<events where try await rig.post("/v1/events", Rig.customEvent(key: "session:all", n: n)) != 202 { refused += 1 }
            }
            let acceptSeconds = (ContinuousClock.now - started).seconds
            let cpuAccepted = try rig.cpuSeconds() - cpuStart
            let complete = try await rig.waitForAccepted(warm + pushes, timeout: .seconds(600))
            let cpuTotal = try rig.cpuSeconds() - cpuStart
            if callgrind { try rig.callgrindControl("--dump") }
            let kernel = observer?.stop() ?? [:]
            answers.sort()
            func ms(_ seconds: Double, per n: Int) -> Double { (seconds * 1000 / Double(n) * 1000).rounded() / 1000 }
            var out: [String: Any] = [
                "benchmark": "cost", "scenario": scenario, "fan_out": scenario == "fanout" ? fanOut : 1, "fanout_threshold": fanoutThreshold ?? -1, "sealed": sealed, "events": events, "pushes": pushes, "refused": refused, "all_delivered": complete,
                "events_per_second": Int(Double(events) / acceptSeconds),
                "cpu_ms_per_event_until_202": ms(cpuAccepted, per: events), "cpu_ms_per_event_total": ms(cpuTotal, per: events),
                "cpu_ms_per_push_total": ms(cpuTotal, per: pushes),
            ]
            for (name, value) in kernel { out["per_event_" + name] = (value / Double(events) * 100).rounded() / 100 }
            if let registrationCPU { out["cpu_ms_per_registration"] = ms(registrationCPU, per: devices) }
            // Herald's own reading of what signing (and sealing) the measured pushes cost.
            let signed = Int(try await rig.metric("herald_signed_pushes_total") - sealingStart.1)
            if signed > 0 {
                let seconds = try await rig.metric("herald_sealing_cpu_seconds_total") - sealingStart.0
                out["cpu_us_per_push_signing_sealing"] = (seconds * 1e7 / Double(signed)).rounded() / 10
            }
            if scenario == "single" {
                out["rate"] = rate
                out["publish_p50_ms"] = (percentile(answers, 0.5) * 10).rounded() / 10
                out["publish_p99_ms"] = (percentile(answers, 0.99) * 10).rounded() / 10
            }
            report(out)
        }
    }
}
