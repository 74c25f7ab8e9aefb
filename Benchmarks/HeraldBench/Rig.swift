import AsyncHTTPClient
import Crypto
import Foundation
import HeraldAPNsCore
import HeraldAPNsSimulator
import HeraldCore
import HeraldDelivery
import HeraldPushCore
import HeraldStore
import NIOCore
import NIOFoundationEssentialsCompat
import NIOHTTP1
import NIOPosix
import Synchronization

/// A benchmark's setup: `herald serve` as a child process (or several, on one PostgreSQL) on a
/// fresh database, delivering over TLS + HTTP/2 to an APNs simulator inside this process (so
/// arrival times share one clock). `launch()` sets the processes and addresses once, before any
/// concurrent use: hence unchecked.
final class Rig: @unchecked Sendable {
    let directory: URL
    let group: MultiThreadedEventLoopGroup
    let simulator: APNsSimulator
    let databasePath: String
    let http: HTTPClient
    private let heraldPath: String
    private let keyPath: String
    private static let keyID = "BENCH00001", teamID = "BENCHTEAM1"
    /// `postgres://…` for a PostgreSQL database (it must be empty); nil for a fresh SQLite file.
    let postgresURL: String?
    let instances: Int
    private var serves: [Process] = []
    private(set) var apis: [String] = []
    /// Each instance's admin listener (`/metrics`, `/v1/stats`).
    private(set) var admins: [String] = []
    private let nextAPI = Atomic<Int>(0)
    /// The first instance's address.
    var api: String { apis[0] }
    static let publishKey = "bench-publish-key"
    static let topic = "com.example.bench"

    init(heraldPath: String, postgresURL: String? = nil, instances: Int = 1) async throws {
        self.postgresURL = postgresURL
        self.instances = instances
        guard FileManager.default.isExecutableFile(atPath: heraldPath) else {
            throw BenchError("\(heraldPath) is not an executable: build it with `swift build -c release --product herald`")
        }
        self.heraldPath = heraldPath
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-bench-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        let privateKey = P256.Signing.PrivateKey()
        keyPath = directory.appendingPathComponent("AuthKey_BENCH00001.p8").path
        try Data(privateKey.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyPath))
        var configuration = APNsSimulatorConfiguration()
        configuration.port = 0
        configuration.controlPort = 0
        configuration.keys = [SimulatorKey(keyID: Self.keyID, teamID: Self.teamID, publicKey: privateKey.publicKey)]
        // A million-device fan-out is checked push by push.
        configuration.recordLimit = 2_100_000
        simulator = try await APNsSimulator.start(configuration: configuration, eventLoopGroup: group)
        databasePath = directory.appendingPathComponent("herald.sqlite").path
        var httpConfiguration = HTTPClient.Configuration()
        // Idle connections are dropped before Herald's 30 s idle timeout closes them under a request.
        httpConfiguration.connectionPool = .init(idleTimeout: .seconds(20), concurrentHTTP1ConnectionsPerHostSoftLimit: 64)
        http = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: httpConfiguration)
    }

    /// Runs `body` with a rig, and shuts it down (the child process included) whatever happens.
    static func with(heraldPath: String, postgresURL: String? = nil, instances: Int = 1, _ body: (Rig) async throws -> Void) async throws {
        let rig = try await Rig(heraldPath: heraldPath, postgresURL: postgresURL, instances: instances)
        do {
            try await body(rig)
        } catch {
            await rig.shutdown()
            throw error
        }
        await rig.shutdown()
    }

    /// Registers `count` devices straight into the database file (before `herald serve` starts),
    /// in transactions of 10,000; device `i` has token `Rig.token(i)` and watches `watch(i)`.
    func prefill(devices count: Int, watching watch: (Int) -> WatchKey) async throws {
        try await prefill(devices: count, watchingAll: { [watch($0)] })
    }

    /// Fresh `push_keys` as a device registers them: a P-256 public key and a 16-byte secret, base64url.
    static func pushKeys() -> (p256dh: String, auth: String) {
        let key = P256.KeyAgreement.PrivateKey()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        return (Base64URL.encode(Array(key.publicKey.x963Representation)), Base64URL.encode(auth))
    }

    /// A sandbox iPhone's attributes with keys for sealed pushes (a fresh pair per device).
    static func sealedAttributes() throws -> DeviceAttributes {
        let keys = pushKeys()
        return try DevicePushKeys(p256dh: keys.p256dh, auth: keys.auth).stored(in: DeviceAttributes(production: false))
    }

    /// As `prefill(devices:watching:)`, with several keys per device: sandbox iPhones.
    func prefill(devices count: Int, watchingAll watch: (Int) -> [WatchKey]) async throws {
        try await withStore { store in
            let now = Date()
            for start in stride(from: 0, to: count, by: 10_000) {
                let batch = try (start..<min(count, start + 10_000)).map { i in
                    Registration(
                        app: "default", token: try APNsTokenRule().token(Self.token(i)), attributes: DeviceAttributes(production: false),
                        watchSet: try WatchSet(watched: watch(i)))
                }
                _ = try await store.register(batch, now: now)
            }
        }
    }

    /// The rig's database as a store of this process (migrated), for setup and direct measurements.
    func withStore<T>(_ body: (any Store) async throws -> T) async throws -> T {
        guard let postgresURL else {
            let store = try SQLiteStore(path: databasePath)
            try await store.migrate()
            return try await body(store)
        }
        let store = try PostgresStore(url: postgresURL)
        let pool = Task { await store.run() }
        defer { pool.cancel() }
        try await store.migrate()
        return try await body(store)
    }

    /// Starts the `herald serve` instances and waits until each listens.
    func launch(environment extra: [String: String] = [:]) async throws {
        for n in 0..<instances { try await launchOne(n, extra: extra) }
    }

    /// `herald signing-key`'s file in the rig's folder, made on first use.
    private func sharedSigningKey() throws -> String {
        let folder = directory.appendingPathComponent("signing")
        let path = folder.appendingPathComponent("signing-key.pem").path
        guard !FileManager.default.fileExists(atPath: path) else { return path }
        let make = Process()
        make.executableURL = URL(fileURLWithPath: heraldPath)
        make.arguments = ["signing-key", "--out", folder.path]
        make.standardOutput = FileHandle.nullDevice
        try make.run()
        make.waitUntilExit()
        return path
    }

    /// Registers devices `first..<first + count` through `herald devices import` (JSON lines of
    /// registration bodies, as an operator moves devices in): sandbox iPhones with token
    /// `Rig.token(i)` watching `watch(i)`, each with fresh push keys when `sealed`.
    func importDevices(_ count: Int, first: Int = 0, sealed: Bool = false, watching watch: (Int) -> [WatchKey]) async throws {
        let path = directory.appendingPathComponent("import-\(first).jsonl")
        _ = FileManager.default.createFile(atPath: path.path, contents: nil)
        let out = try FileHandle(forWritingTo: path)
        var chunk = ""
        for i in first..<(first + count) {
            let keys = watch(i).map { #""\#($0.description)""# }.joined(separator: ",")
            var line = #"{"device_token":"\#(Self.token(i))","platform":"ios","environment":"sandbox","watched_addresses":[\#(keys)]"#
            if sealed {
                let pair = Self.pushKeys()
                line += #","push_keys":{"p256dh":"\#(pair.p256dh)","auth":"\#(pair.auth)"}"#
            }
            chunk += line + "}\n"
            if chunk.utf8.count > 1 << 20 {
                try out.write(contentsOf: Data(chunk.utf8))
                chunk = ""
            }
        }
        try out.write(contentsOf: Data(chunk.utf8))
        try out.close()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: heraldPath)
        process.arguments = ["devices", "import", path.path]
        process.environment = try serveEnvironment()
        let log = directory.appendingPathComponent("import-\(first).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: log)
        process.standardError = process.standardOutput
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("herald devices import failed: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
        }
        try? FileManager.default.removeItem(at: path)
    }

    /// What `herald serve` (and `herald devices import`) runs with.
    private func serveEnvironment() throws -> [String: String] {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HERALD_") }
        env.merge([
            "HERALD_DATABASE_URL": postgresURL ?? "sqlite:" + databasePath, "HERALD_HTTP_PORT": "0", "HERALD_ADMIN_PORT": "0", "HERALD_PUBLISH_KEYS": Self.publishKey,
            "HERALD_APNS_KEY_PATH": keyPath, "HERALD_APNS_KEY_ID": Self.keyID, "HERALD_APNS_TEAM_ID": Self.teamID,
            "HERALD_APNS_TOPIC": Self.topic, "HERALD_APNS_ENVIRONMENT": "sandbox",
            "HERALD_APNS_URL": simulator.url.absoluteString,
            "HERALD_APNS_CA_FILE": try simulator.writeCA(to: directory.path),
            // The load comes from one address and one key: measure the gateway, not its rate limits.
            "HERALD_REGISTRATION_RATE": "0", "HERALD_PUBLISH_RATE": "0", "HERALD_MATRIX_RATE": "0",
        ]) { _, new in new }
        // One signing key for every instance: PostgreSQL refuses a key made at start.
        if postgresURL != nil { env["HERALD_SIGNING_KEY_PATH"] = try sharedSigningKey() }
        return env
    }

    private func launchOne(_ n: Int, extra: [String: String]) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: heraldPath)
        process.arguments = ["serve"]
        var env = try serveEnvironment()
        env.merge(extra) { _, new in new }
        process.environment = env
        let logPath = directory.appendingPathComponent("serve-\(n).log").path
        let readyPath = directory.appendingPathComponent("serve-\(n).ready").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        _ = FileManager.default.createFile(atPath: readyPath, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: readyPath))
        try process.run()
        serves.append(process)
        // `herald serve` prints one readiness line on standard output once it listens.
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .seconds(60) {
            let line = (try? Data(contentsOf: URL(fileURLWithPath: readyPath))) ?? Data()
            if line.contains(UInt8(ascii: "\n")),
                let ready = try? JSONSerialization.jsonObject(with: line.split(separator: UInt8(ascii: "\n"))[0]) as? [String: Any],
                let http = ready["http"] as? String, let admin = ready["admin"] as? String
            {
                apis.append("http://" + http)
                admins.append("http://" + admin)
                return
            }
            guard process.isRunning else { throw BenchError("herald serve exited: \((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")") }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw BenchError("herald serve did not start within 60 s")
    }

    /// Kills every `herald serve` with SIGKILL (no shutdown of any kind), as a crash would.
    func killAll() {
        for serve in serves where serve.isRunning {
            kill(serve.processIdentifier, SIGKILL)
            serve.waitUntilExit()
        }
        serves = []
        apis = []
        admins = []
    }

    /// POSTs JSON to the gateway; returns the status.
    func post(_ path: String, _ body: String, publisher: Bool = true) async throws -> Int {
        // Round-robin over the instances, as a load balancer would.
        let api = apis[nextAPI.wrappingAdd(1, ordering: .relaxed).oldValue % apis.count]
        var request = HTTPClientRequest(url: api + path)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        if publisher { request.headers.add(name: "authorization", value: "Bearer \(Self.publishKey)") }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await http.execute(request, timeout: .seconds(60))
        _ = try await response.body.collect(upTo: 1 << 20)
        return Int(response.status.code)
    }

    /// Sends one single-event publish per device at `rate`, each at its due time, without
    /// waiting for answers; returns each answer and how long after its due time it came. Event `n`
    /// goes to device `device(n)` (itself by default).
    func openLoop(
        rate: Int, devices: Range<Int>, device: @escaping @Sendable (Int) -> Int = { $0 }
    ) async throws -> [(accepted: Bool, milliseconds: Double)] {
        let start = ContinuousClock.now
        let interval = Duration.seconds(1) / rate
        return try await withThrowingTaskGroup(of: (Bool, Double).self) { group in
            for (n, i) in devices.enumerated() {
                let due = start + interval * n
                try await Task.sleep(until: due, clock: .continuous)
                group.addTask {
                    // A failed request counts as refused: a long run must not end on one closed connection.
                    let status = (try? await self.post("/v1/events", Rig.customEvent(device: device(i)))) ?? 0
                    return (status == 202, (ContinuousClock.now - due).seconds * 1000)
                }
            }
            var answers: [(accepted: Bool, milliseconds: Double)] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
    }

    /// POSTs each body to `/v1/events:batch`, `concurrency` at a time; returns how many were refused.
    func postBatches(_ bodies: [String], concurrency: Int) async throws -> Int {
        try await withThrowingTaskGroup(of: Int.self) { group in
            var next = 0, refused = 0
            func addNext() {
                guard next < bodies.count else { return }
                let body = bodies[next]
                next += 1
                group.addTask { try await self.post("/v1/events:batch", body) == 202 ? 0 : 1 }
            }
            for _ in 0..<concurrency { addNext() }
            while let r = try await group.next() {
                refused += r
                addNext()
            }
            return refused
        }
    }

    /// GETs a JSON object from the first instance's admin listener (`/v1/stats`).
    func getAdminJSON(_ path: String) async throws -> [String: Any] {
        let response = try await http.execute(HTTPClientRequest(url: admins[0] + path), timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return (try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]) ?? [:]
    }

    /// The sum of a metric's series on every instance's `/metrics` (0 when none has it).
    func metric(_ name: String) async throws -> Double {
        var sum = 0.0
        for admin in admins {
            let response = try await http.execute(HTTPClientRequest(url: admin + "/metrics"), timeout: .seconds(30))
            let text = String(buffer: try await response.body.collect(upTo: 16 << 20))
            for line in text.split(separator: "\n") where line.hasPrefix(name + "{") || line.hasPrefix(name + " ") {
                sum += line.split(separator: " ").last.flatMap { Double($0) } ?? 0
            }
        }
        return sum
    }

    /// Resident and peak resident memory of `herald serve`, in KiB (Linux /proc).
    func memory() throws -> (rss: Int, peak: Int) {
        guard let pid = serves.first?.processIdentifier else { throw BenchError("herald serve is not running") }
        return try Self.memory(of: "\(pid)")
    }

    /// A process's resident and peak memory in KiB (`/proc/<pid>/status`; "self" for this one).
    static func memory(of pid: String) throws -> (rss: Int, peak: Int) {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        func field(_ name: String) -> Int {
            let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    /// CPU seconds (user + system) every `herald serve` instance has used so far (Linux
    /// `/proc/<pid>/stat`, fields 14 and 15, in clock ticks).
    func cpuSeconds() throws -> Double {
        try serves.reduce(0) { $0 + (try Self.cpuSeconds(of: "\($1.processIdentifier)")) }
    }

    /// `perf` on the first `herald serve` for the measured part of a run: call samples into
    /// `samples` (for Benchmarks/perf-stages.py) and, with `counts`, the kernel's count of its
    /// syscalls, WAL syncs and context switches (tracepoints: the same on a slow or loaded machine).
    /// `stop()` ends both and returns the counts by name.
    func observe(samples: String?, counts: Bool) async throws -> KernelObserver {
        let observer = try KernelObserver(
            pid: serves[0].processIdentifier, samples: samples, counts: counts ? directory.appendingPathComponent("counts.csv").path : nil)
        try await Task.sleep(for: .milliseconds(500))  // perf attaches before the measured part
        return observer
    }

    /// `callgrind_control ARGUMENT` for the first `herald serve` (run under callgrind).
    func callgrindControl(_ argument: String) throws {
        let control = Process()
        control.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        control.arguments = ["callgrind_control", argument, "\(serves[0].processIdentifier)"]
        control.standardOutput = FileHandle.nullDevice
        control.standardError = FileHandle.nullDevice
        try control.run()
        control.waitUntilExit()
        guard control.terminationStatus == 0 else { throw BenchError("callgrind_control \(argument) failed: is herald serve under callgrind?") }
    }

    /// CPU seconds this process (the load generator and the in-process simulator) has used so far.
    func ownCPUSeconds() throws -> Double { try Self.cpuSeconds(of: "self") }

    static func cpuSeconds(of pid: String) throws -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // The command name (field 2) is in parentheses and may hold spaces: count after it.
        guard let close = stat.lastIndex(of: ")") else { throw BenchError("unreadable /proc stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state): utime is field 14, stime field 15.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
            throw BenchError("unreadable /proc stat")
        }
        return (user + system) / ticks
    }

    /// Waits until the simulator has accepted `count` pushes; false on timeout.
    func waitForAccepted(_ count: Int, timeout: Duration) async throws -> Bool {
        let started = ContinuousClock.now
        while simulator.stats.accepted < count {
            guard ContinuousClock.now - started < timeout else { return false }
            try await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    func shutdown() async {
        for serve in serves where serve.isRunning {
            serve.terminate()
            serve.waitUntilExit()
        }
        try? await http.shutdown()
        await simulator.shutdown()
        try? await group.shutdownGracefully()
        try? FileManager.default.removeItem(at: directory)
    }

    static func token(_ i: Int) -> String {
        let hex = String(i, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }

    /// A `custom` event to every device watching `key`.
    static func customEvent(key: String, n: Int) -> String {
        #"{"template":"custom","targets":{"keys":["\#(key)"]},"fields":{"aps":{"alert":"n\#(n)"}}}"#
    }

    /// A `custom` event for one device, as `/v1/events` takes it.
    static func customEvent(device i: Int) -> String {
        #"{"template":"custom","targets":{"tokens":["\#(token(i))"]},"fields":{"aps":{"alert":"n\#(i)"}}}"#
    }
}

/// `perf record` and `perf stat` attached to a process; see `Rig.observe`.
final class KernelObserver {
    private var pids: [pid_t] = []
    private let countsPath: String?

    init(pid: Int32, samples: String?, counts: String?) throws {
        countsPath = counts
        if let samples { try start(["record", "-F", "999", "-g", "-o", samples, "-p", "\(pid)"]) }
        // The events Benchmarks/kernel-counts.sh counts for the scripts.
        if let counts {
            try start(["stat", "-x", ",", "-o", counts, "-e", "raw_syscalls:sys_enter,syscalls:sys_enter_fdatasync,context-switches", "-p", "\(pid)"])
        }
    }

    /// posix_spawn with no signal blocked: this process's threads block SIGINT, and a perf that
    /// inherited that mask could not be told to stop and write what it measured.
    private func start(_ arguments: [String]) throws {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = (["perf"] + arguments).map { strdup($0) } + [nil]
        defer { for arg in argv { free(arg) } }
        var pid: pid_t = 0
        guard posix_spawnp(&pid, "perf", &actions, &attributes, argv, environ) == 0 else { throw BenchError("perf did not start (apt-get install linux-perf)") }
        pids.append(pid)
    }

    /// Stops perf; the counts (`sys_enter`, `sys_enter_fdatasync`, `context-switches`), if asked for.
    func stop() -> [String: Double] {
        for pid in pids {
            kill(pid, SIGINT)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        pids = []
        guard let countsPath, let text = try? String(contentsOfFile: countsPath, encoding: .utf8) else { return [:] }
        var counts: [String: Double] = [:]
        for line in text.split(separator: "\n") where line.first?.isNumber == true {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            if fields.count > 2, let value = Double(fields[0]) { counts[String(fields[2].split(separator: ":").last ?? "")] = value }
        }
        return counts
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Percentiles of a sample.
func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

/// Prints one result line as JSON (sorted keys), for the README's table.
func report(_ fields: [String: Any]) {
    let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data()
    print(String(decoding: data, as: UTF8.self))
}
