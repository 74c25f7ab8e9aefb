import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldPushCore
import HeraldStore
import HeraldTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif



func hexToken(_ i: Int) -> String {
    let hex = String(i, radix: 16)
    return String(repeating: "0", count: 64 - hex.count) + hex
}

@Suite("The gateway as processes", .serialized)
struct GatewayProcessTests {
    @Test("herald cleanup removes devices not seen for HERALD_STALE_AFTER_DAYS and prints the count")
    func cleanup() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-cleanup-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("herald.sqlite").path
        let store = try SQLiteStore(path: path)
        try await store.migrate()
        for (i, age) in [(1, 100.0), (2, 5.0)] {
            _ = try await store.register(
                Registration(app: "default", token: try APNsTokenRule().token(hexToken(i)), attributes: DeviceAttributes(production: false),
                             watchSet: .empty),
                now: Date().addingTimeInterval(-age * 86_400))
        }
        let (code, json) = try runHerald(["cleanup"], environment: ["HERALD_DATABASE_URL": "sqlite:" + path, "HERALD_STALE_AFTER_DAYS": "30"])
        #expect(code == 0)
        #expect(json["removed"] as? Int == 1)
        #expect(try await store.stats().devices == ["default": ["ios": 1]])
    }

    @Test("SIGTERM with 2,000 deliveries due and a batch in flight: it finishes and is recorded, exit 0, a restart sends the rest, again only what timed out")
    func gracefulShutdown() async throws {
        let devices = 2_000
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-term-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("herald.sqlite").path
        // 2,000 devices and one event to all of them, committed before the gateway starts.
        let store = try SQLiteStore(path: path)
        try await store.migrate()
        let rows = try await store.register(try (0..<devices).map { i in
            Registration(app: "default", token: try APNsTokenRule().token(hexToken(i)), attributes: DeviceAttributes(production: false), watchSet: .empty)
        }, now: Date()).map(\.rowID)
        let push = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(#"{"aps":{"alert":"x"}}"#.utf8))
        _ = try await store.enqueue(
            [NewEvent(id: "e", app: "default", template: "custom", push: push, expiresAt: Date().addingTimeInterval(3_600), deviceRowIDs: rows)],
            checkpoint: nil, now: Date())

        let mock = try MockAPNsProcess(directory: directory, topic: "com.example.term")
        defer { mock.process.kill(SIGTERM) }
        // Every push is answered after 50 ms, but the first device's after 3 s: the first claimed
        // batch (the lowest 500 delivery ids, one outbox batch) is surely in flight when the signal comes.
        _ = try await http("POST", mock.control + "/faults", #"{"kind":"delay","token":"\#(hexToken(0))","delay_ms":3000}"#)
        _ = try await http("POST", mock.control + "/faults", #"{"kind":"delay","delay_ms":50}"#)
        var env = mock.serveEnvironment
        env.merge(["HERALD_DATABASE_URL": "sqlite:" + path, "HERALD_HTTP_PORT": "0"]) { _, new in new }

        var serve = try HeraldProcess(["serve"], environment: env)
        _ = try serve.ready()
        let batch = 500
        // Watched and signalled from a thread of its own: the first batch is held for 3 s, and
        // the task pool may be busy with other suites for that long.
        let signalled = serve
        let statsURL = URL(string: mock.control + "/stats")!
        let (signalledAtMs, samples) = try await offPool { () -> (Int64, [String]) in
            // Every 50 polls the simulator's connections, streams opened and pushes accepted, for a
            // failure's message: it tells a client that held its requests from a server that sat on them.
            var samples: [String] = []
            let start = Date()
            for i in 0..<3_000 {
                let data = try Data(contentsOf: statsURL)
                let stats = try JSONSerialization.jsonObject(with: data) as? [String: Any]
                let accepted = stats?["accepted"] as? Int ?? 0
                if i % 50 == 0 {
                    samples.append("+\(Int(Date().timeIntervalSince(start) * 1000)) ms: \(stats?["connections_opened"] as? Int ?? 0) connections, \(stats?["streams"] as? Int ?? 0) streams, \(accepted) accepted")
                }
                if accepted >= batch { break }
                usleep(10_000)
            }
            signalled.kill(SIGTERM)
            return (Int64(Date().timeIntervalSince1970 * 1000), samples)
        }
        #expect(serve.exitStatus == 0)
        // What was in flight was answered and recorded before the exit: every push the simulator
        // took is `sent`, or — on a machine loaded past the push's 10 s deadline — pending again
        // with the attempt's reason; nothing is left `sending`. (How many batches went before the
        // signal depends on the machine's speed: not asserted.)
        let stats = try await store.stats()
        let accepted = try await mock.accepted()
        let event = try #require(try await store.event(id: "e"))
        let sent = stats.deliveries[.sent] ?? 0
        let retried = (event.reasons[.pending] ?? [:]).values.reduce(0, +)
        #expect(stats.deliveries[.sending] == nil, "\(stats.deliveries)")
        let held = sent <= accepted && accepted <= sent + retried
        let timeline = held
            ? "" : try await arrivalTimeline(mock, signalledAtMs: signalledAtMs) + "\nthe simulator while waiting: " + samples.joined(separator: "; ")
                + "\nherald serve's log:\n" + serve.fullLog().suffix(3_000)
        #expect(held && accepted >= batch, "sent \(sent), retried \(event.reasons), the simulator accepted \(accepted)\n\(timeline)")
        #expect(sent + (stats.deliveries[.pending] ?? 0) == devices)

        serve = try HeraldProcess(["serve"], environment: env)
        let restarted = try serve.ready()
        var tokens = Set<String>()
        var total = 0
        // Until every delivery is sent, not only until every device has a push: a push retried
        // after its backoff (a deadline passed) would come after the last first push.
        var unsent: Int? = nil
        for _ in 0..<600 {
            (tokens, total) = try await mock.delivered()
            let deliveries = try await store.stats().deliveries
            unsent = (deliveries[.pending] ?? 0) + (deliveries[.sending] ?? 0)
            if tokens.count == devices, unsent == 0 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(tokens.count == devices, "\(tokens.count) of \(devices) devices got their push")
        #expect(unsent == 0, "\(unsent ?? 0) deliveries not sent")
        // A push goes again only when an answer never came in time: before the signal, or
        // (a loaded machine) after the restart.
        let (_, exposition) = try await http("GET", restarted.admin + "/metrics")
        let retriedAfterRestart = String(decoding: exposition, as: UTF8.self).split(separator: "\n")
            .filter { $0.hasPrefix(#"herald_delivery_attempts_total{outcome="retry""#) }
            .compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
        #expect(total - devices <= retried + retriedAfterRestart, "\(total - devices) duplicates, \(retried) retried before the signal, \(retriedAfterRestart) after the restart")
        serve.kill(SIGTERM)
        #expect(serve.exitStatus == 0)
    }

    /// When the simulator recorded the pushes, relative to the first, and when the signal went:
    /// tells a late signal (a busy machine) from pushes that reached the simulator late.
    private func arrivalTimeline(_ mock: MockAPNsProcess, signalledAtMs: Int64) async throws -> String {
        let (_, data) = try await http("GET", mock.control + "/notifications")
        let list = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
        let times = list.compactMap { ($0["received_at_ms"] as? NSNumber)?.int64Value }.sorted()
        guard let first = times.first else { return "nothing recorded" }
        let marks = [1, 100, 250, 499, 500, 501, 750, 1_000].filter { $0 <= times.count }
        let at = marks.map { "#\($0) +\(times[$0 - 1] - first) ms" }.joined(separator: ", ")
        return "recorded \(times.count): \(at); signal +\(signalledAtMs - first) ms"
    }

    @Test("crash safety: SIGKILL mid-delivery, restart on the same file, every device (iOS and Android) gets its push")
    func crashSafety() async throws {
        let devices = 5_000
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-crash-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        // APNs: the simulator as its own process, so it outlives the gateway.
        let mock = try MockAPNsProcess(directory: directory, topic: "com.example.crash")
        defer { mock.process.kill(SIGTERM) }
        // FCM too: every fifth device is an Android phone.
        let fcm = try MockFCMProcess(directory: directory.appendingPathComponent("fcm"))
        defer { fcm.process.kill(SIGTERM) }
        func token(_ i: Int) -> (String, String) {
            i % 5 == 4 ? ("fcm-crash_\(i):" + String(repeating: "K", count: 140), "android") : (hexToken(i), "ios")
        }
        let control = mock.control
        var env = mock.serveEnvironment.merging(fcm.serveEnvironment) { _, new in new }
        env.merge([
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path,
            "HERALD_HTTP_PORT": "0", "HERALD_PUBLISH_KEYS": "publisher-key-00001",
            "HERALD_OUTBOX_LEASE_SECONDS": "15",
            // 5,000 registrations from one address, as fast as 16 clients go.
            "HERALD_REGISTRATION_RATE": "0",
        ]) { _, new in new }

        var serve = try HeraldProcess(["serve"], environment: env)
        var api = try serve.ready().api
        // Slow answers keep deliveries in flight when the gateway dies.
        _ = try await http("POST", control + "/faults", #"{"kind":"delay","delay_ms":2000}"#)

        let firstAPI = api
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<16 {
                group.addTask {
                    let api = firstAPI
                    for i in stride(from: worker, to: devices, by: 16) {
                        let (device, platform) = token(i)
                        let (status, _) = try await http("POST", api + "/v1/push/register",
                            #"{"device_token":"\#(device)","platform":"\#(platform)","watched_addresses":["session:s\#(i)"]}"#)
                        guard status == 200 else { throw CLIError("register \(i): \(status)") }
                    }
                }
            }
            try await group.waitForAll()
        }
        // 250 per batch: the 64 KiB body limit holds about 600 such events, below the 1,000-event batch cap.
        for batch in stride(from: 0, to: devices, by: 250) {
            let events = (batch..<batch + 250).map {
                #"{"template":"custom","targets":{"keys":["session:s\#($0)"]},"fields":{"aps":{"alert":"n\#($0)"}}}"#
            }.joined(separator: ",")
            let (status, _) = try await http("POST", api + "/v1/events:batch", #"{"events":[\#(events)]}"#, bearer: "publisher-key-00001")
            #expect(status == 202)
        }
        // Kill it mid-delivery: some pushes out, most not.
        var accepted = 0
        for _ in 0..<300 {
            accepted = try await mock.accepted()
            if accepted >= 1_000 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        serve.kill(SIGKILL)
        #expect(accepted > 0 && accepted < devices, "killed after \(accepted) pushes")

        // Restart on the same file; the dead process's leases expire and the rest go out.
        serve = try HeraldProcess(["serve"], environment: env)
        api = try serve.ready().api
        var tokens = Set<String>()
        var total = 0
        for _ in 0..<900 {
            let (apns, android) = (try await mock.delivered(), try await fcm.delivered())
            (tokens, total) = (apns.tokens.union(android.tokens), apns.total + android.total)
            if tokens.count == devices { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(tokens.count == devices, "\(tokens.count) of \(devices) devices got their push")
        #expect(tokens.filter { $0.hasPrefix("fcm-crash_") }.count == devices / 5, "Android devices reached")
        let duplicates = total - tokens.count
        // Only what the killed process had in flight (one outbox batch per lane, APNs and FCM) can arrive twice.
        #expect(duplicates <= 2 * 500)
        print("crash safety: killed after \(accepted) pushes; \(tokens.count) devices reached; \(duplicates) duplicates")
        serve.kill(SIGTERM)
        #expect(serve.exitStatus == 0)
    }
}
