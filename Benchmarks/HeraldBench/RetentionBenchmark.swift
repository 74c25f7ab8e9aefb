import ArgumentParser
import Foundation
import GRDB
import HeraldCore
import HeraldPushCore

/// `herald-bench retention`: a SQLite database holding `--finished` finished deliveries (sent, two
/// hours old, `--fanout` per event) is pruned by `herald serve` (`HERALD_RETENTION_HOURS=1`)
/// while single events are published open loop at `--rate`; reports the publish latency during
/// the pruning, how long the pruning took, and Herald's CPU.
struct RetentionBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "retention")
    @OptionGroup var rig: RigOptions
    @Option(help: "Finished deliveries in the database before Herald starts.") var finished = 10_000_000
    @Option(help: "Deliveries per old event.") var fanout = 100
    @Option(help: "Single events per second published while pruning (open loop).") var rate = 1_000
    @Option(help: "Longest the measurement may run, in seconds.") var maximumSeconds = 1_800

    func run() async throws {
        guard finished >= fanout, fanout >= 1, rate >= 1 else { throw ValidationError("--finished ≥ --fanout ≥ 1, --rate ≥ 1") }
        guard rig.postgresURL == nil else { throw ValidationError("retention runs on SQLite") }
        let devices = 5_000
        try await Rig.with(heraldPath: rig.herald) { rig in
            try await rig.prefill(devices: devices) { .session("s\($0)") }
            let filled = ContinuousClock.now
            try Self.fillHistory(path: rig.databasePath, deliveries: finished, fanout: fanout, devices: min(fanout, devices))
            let fillSeconds = (ContinuousClock.now - filled).seconds
            let size = (try? FileManager.default.attributesOfItem(atPath: rig.databasePath)[.size] as? Int) ?? 0
            try await rig.launch(environment: ["HERALD_RETENTION_HOURS": "1"])
            let log = rig.directory.appendingPathComponent("serve-0.log")
            func pruned() -> String? {
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                return text.split(separator: "\n").first { $0.contains("past the retention deleted") }.map(String.init)
            }
            let cpuStart = try rig.cpuSeconds()
            let started = ContinuousClock.now
            var answers: [Double] = []
            var refused = 0, published = 0
            // Open-loop windows of 5 s until the pass's line is in the log (the pruning is done); two at least.
            while pruned() == nil || published < rate * 10, ContinuousClock.now - started < .seconds(maximumSeconds) {
                let window = try await rig.openLoop(rate: rate, devices: 0..<(rate * 5), device: { $0 % devices })
                answers += window.map(\.milliseconds)
                refused += window.filter { !$0.accepted }.count
                published += window.count
            }
            let seconds = (ContinuousClock.now - started).seconds
            let cpu = try rig.cpuSeconds() - cpuStart
            guard let line = pruned() else { throw BenchError("the pruning did not end within \(maximumSeconds) s") }
            answers.sort()
            func tenths(_ v: Double) -> Double { (v * 10).rounded() / 10 }
            report([
                "benchmark": "retention", "finished_deliveries": finished, "fanout": fanout, "database_mb": size / 1_048_576,
                "fill_seconds": Int(fillSeconds), "prune_seconds_about": Int(seconds), "deliveries_pruned_per_second_about": Int(Double(finished) / seconds),
                "rate": rate, "published": published, "refused": refused,
                "publish_p50_ms": tenths(percentile(answers, 0.5)), "publish_p99_ms": tenths(percentile(answers, 0.99)),
                "publish_max_ms": tenths(answers.last ?? 0), "herald_cpu_seconds": tenths(cpu), "log": line,
            ])
        }
    }

    /// Writes `deliveries` sent deliveries, two hours old, `fanout` per event, straight into the
    /// database (SQLite generates the rows), in transactions of a million.
    static func fillHistory(path: String, deliveries: Int, fanout: Int, devices: Int) throws {
        let queue = try DatabaseQueue(path: path)
        let t = Int64((Date().timeIntervalSince1970 - 7_200) * 1000)
        let events = deliveries / fanout
        try queue.write { db in
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                    INSERT INTO events (id, app_id, template, push_type, priority, collapse_id, payload, created_at, expires_at)
                    SELECT printf('old-%09d', i), 'default', 'custom', 'alert', 10, NULL, X'7B7D', ? + i / 1000, ? + 86400000 FROM n
                    """, arguments: [events - 1, t, t])
        }
        for start in stride(from: 0, to: events * fanout, by: 1_000_000) {
            let end = min(events * fanout, start + 1_000_000)
            try queue.write { db in
                try db.execute(
                    sql: """
                        WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                        INSERT INTO deliveries (event_id, device_row, app_id, state, attempts, next_attempt_at, apns_id, expires_at,
                                                created_at, updated_at, platform)
                        SELECT printf('old-%09d', i / ?), (i % ?) + 1, 'default', 'sent', 1, ?, lower(hex(randomblob(16))), ? + 86400000,
                               ? + (i / ?) / 1000, ?, 'ios' FROM n
                        """, arguments: [start, end - 1, fanout, devices, t, t, t, fanout, t])
            }
        }
    }
}
