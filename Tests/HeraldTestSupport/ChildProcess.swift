public import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Finds an executable of this package built beside the test bundle (`swift build --build-tests`
/// builds them all).
public func builtExecutable(_ name: String) throws -> URL {
    let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let candidates = [
        beside.appendingPathComponent(name),
        beside.deletingLastPathComponent().appendingPathComponent(name),
        packageRoot.appendingPathComponent(".build/debug/" + name),
    ]
    guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
        throw CLIError("\(name) binary not found; run `swift build` first (looked in \(candidates.map(\.path)))")
    }
    return found
}

/// The `herald` binary built beside the test bundle.
public func heraldExecutable() throws -> URL {
    try builtExecutable("herald")
}

/// What a finished child process printed.
public struct ProcessOutput: Sendable {
    public var status: Int32
    public var stdout: Data
    public var stderr: Data
    /// The last line of standard output as a JSON object (empty if it is not one).
    public var lastJSONLine: [String: Any] {
        let line = String(decoding: stdout, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] ?? [:]
    }
}

/// Runs a program to completion with `input` on its standard input.
public func runProcess(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil, input: Data = Data()) throws -> ProcessOutput {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    // Drain stderr concurrently so a chatty child never blocks on a full pipe.
    let errors = ErrorsReader(stderr.fileHandleForReading)
    try stdin.fileHandleForWriting.write(contentsOf: input)
    try stdin.fileHandleForWriting.close()
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProcessOutput(status: process.terminationStatus, stdout: output, stderr: errors.wait())
}

/// `runProcess` on a thread of its own. A test that waits for a child must not hold one of the
/// task pool's few threads (two on a 2-core machine): the child may be talking to a server whose
/// handlers run on that pool.
public func runProcessOffPool(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) async throws -> ProcessOutput {
    try await offPool { try runProcess(executable, arguments, environment: environment) }
}

/// Runs blocking work on a thread of its own, not on one of the task pool's few threads: for a
/// test whose timing must not wait for other suites' tasks.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

private final class ErrorsReader: @unchecked Sendable {
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)
    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }
    }
    func wait() -> Data {
        done.wait()
        return data
    }
}

public struct CLIError: Error, CustomStringConvertible {
    public var description: String
    public init(_ d: String) { description = d }
}

/// A child `herald` process whose standard error is read as it comes, by a thread of its own: a
/// process that logs more than a pipe holds (64 KiB) never stalls on a test that reads it later.
public final class HeraldProcess: @unchecked Sendable {
    public let process = Process()
    private let errors = Pipe()
    private let captured = CapturedOutput()

    /// What the process wrote to standard error so far.
    public var log: String { captured.text }

    private let output: Pipe

    /// - Parameters:
    ///   - openFileLimit: runs the process under this open-file limit (soft and hard), as a small
    ///     machine's default would.
    ///   - softOpenFileLimit: lowers only the soft limit, the hard one kept (a distribution's default).
    public init(_ arguments: [String], environment: [String: String], stdout: Pipe? = nil, openFileLimit: Int? = nil, softOpenFileLimit: Int? = nil) throws {
        if let softOpenFileLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", #"ulimit -S -n \#(softOpenFileLimit) && exec "$0" "$@""#, try heraldExecutable().path] + arguments
        } else if let openFileLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", #"ulimit -n \#(openFileLimit) && exec "$0" "$@""#, try heraldExecutable().path] + arguments
        } else {
            process.executableURL = try heraldExecutable()
            process.arguments = arguments
        }
        var env = ProcessInfo.processInfo.environment
        for key in env.keys where key.hasPrefix("HERALD_") { env[key] = nil }
        // Tests run many servers side by side: each admin listener takes a free port unless told.
        if arguments.first == "serve", environment["HERALD_ADMIN_PORT"] == nil { env["HERALD_ADMIN_PORT"] = "0" }
        env.merge(environment) { _, new in new }
        process.environment = env
        process.standardError = errors
        output = stdout ?? Pipe()
        process.standardOutput = output
        try process.run()
        let (handle, captured) = (errors.fileHandleForReading, captured)
        Thread.detachNewThread {
            while case let chunk = handle.availableData, !chunk.isEmpty { captured.append(chunk) }
            captured.end()
        }
    }

    /// `herald serve`'s readiness line: the API's, the admin listener's and the built-in simulators' base URLs.
    public func ready() throws -> (
        api: String, simulatorControl: String?, fcmSimulatorControl: String?, webPushSimulatorControl: String?, admin: String
    ) {
        let line = try firstLine(of: output, from: process, command: "herald serve") { fullLog() }
        guard let ready = try JSONSerialization.jsonObject(with: line.split(separator: UInt8(ascii: "\n"))[0]) as? [String: Any],
            ready["ready"] as? Bool == true, let http = ready["http"] as? String
        else { throw CLIError("not a readiness line: \(String(decoding: line, as: UTF8.self))") }
        return (
            "http://" + http, ready["simulator_control"] as? String, ready["fcm_simulator_control"] as? String,
            ready["webpush_simulator_control"] as? String, "http://" + (ready["admin"] as? String ?? "")
        )
    }

    /// Reads the log until `marker` is followed by a port number.
    public func port(after marker: String, timeout: TimeInterval = 30) throws -> Int {
        let start = Date()
        while true {
            if let range = log.range(of: marker), let port = Int(log[range.upperBound...].prefix(while: \.isNumber)) {
                return port
            }
            guard Date().timeIntervalSince(start) < timeout else { throw CLIError("no \(marker) in: \(log)") }
            if captured.ended { throw CLIError("process exited: \(log)") }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Sends `signal` and waits for the exit. A process still running `seconds` later hangs:
    /// it is killed and the test records it, so a stuck shutdown fails its own test, not the run.
    public func kill(_ signal: Int32, within seconds: Double = 120) {
        Foundation.kill(process.processIdentifier, signal)
        if waitForExit(until: Date() + seconds) != nil { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        _ = waitForExit(until: .distantFuture)
        Issue.record("herald \(process.arguments?.first ?? "") did not exit within \(Int(seconds)) s of signal \(signal), and was killed; its log ends:\n\(log.suffix(3_000))")
    }

    /// How the process ended (an exit and its status, or the signal that ended it, as
    /// Foundation's `terminationReason` and `terminationStatus` give them), nil while it runs.
    /// Read from the kernel without reaping the child (`WNOWAIT`): Foundation learns of an exit on
    /// a thread of its own, and under a full suite's load it once missed one, leaving a zombie
    /// while `waitUntilExit` waited in CI for ten minutes (and `terminationStatus` traps until
    /// Foundation knows).
    public var exit: (reason: Process.TerminationReason, status: Int32)? {
        let pid = process.processIdentifier
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 else {
            // Reaped already: Foundation has the status.
            return process.isRunning ? nil : (process.terminationReason, process.terminationStatus)
        }
        guard info._sifields._sigchld.si_pid == pid else { return nil }
        return (info.si_code == CLD_EXITED ? .exit : .uncaughtSignal, info._sifields._sigchld.si_status)
    }

    /// The exit status, or the signal that ended the process; nil while it runs.
    public var exitStatus: Int32? { exit?.status }

    /// Waits for the exit until `deadline`: its status, or nil if the process still runs.
    public func waitForExit(until deadline: Date) -> Int32? {
        while Date() < deadline {
            if let status = exitStatus { return status }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return exitStatus
    }

    /// The most memory the process has held resident so far (`VmHWM` in `/proc/<pid>/status`), in bytes.
    public func peakResidentBytes() throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { throw CLIError("no VmHWM in /proc/\(process.processIdentifier)/status") }
        return kib * 1_024
    }

    /// Everything the process wrote to standard error, once it has exited.
    public func fullLog() -> String {
        _ = waitForExit(until: .distantFuture)
        captured.waitForEnd()
        return log
    }
}

/// Bytes a reader thread appends until the pipe ends.
private final class CapturedOutput: Sendable {
    private let state = Mutex<(bytes: Data, ended: Bool)>((Data(), false))
    private let endSignal = DispatchSemaphore(value: 0)

    var text: String { state.withLock { String(decoding: $0.bytes, as: UTF8.self) } }
    var ended: Bool { state.withLock { $0.ended } }

    func append(_ chunk: Data) { state.withLock { $0.bytes += chunk } }

    func end() {
        state.withLock { $0.ended = true }
        endSignal.signal()
    }

    /// Returns once the pipe has ended (at once after the first time).
    func waitForEnd() {
        guard !ended else { return }
        endSignal.wait()
        endSignal.signal()
    }
}


/// `herald serve` with its built-in APNs simulator, as a child process, and the addresses its readiness line gives.
public struct ServeProcess: Sendable {
    public let process: HeraldProcess
    /// The API's base URL.
    public let api: String
    /// The built-in simulator's control URL.
    public let control: String
    /// The built-in FCM simulator's control URL, when it runs.
    public let fcmControl: String?
    /// The built-in Web Push simulator's control URL, when it runs.
    public let webPushControl: String?
    /// The admin listener's base URL (`/metrics`, `/v1/stats`).
    public let admin: String

    /// Starts `herald serve` with `environment` (give it `HERALD_HTTP_PORT=0` and a database).
    public init(environment: [String: String], openFileLimit: Int? = nil) throws {
        process = try HeraldProcess(["serve"], environment: environment, openFileLimit: openFileLimit)
        let ready = try process.ready()
        api = ready.api
        guard let control = ready.simulatorControl else { throw CLIError("herald serve started no simulator") }
        self.control = control
        self.fcmControl = ready.fcmSimulatorControl
        self.webPushControl = ready.webPushSimulatorControl
        self.admin = ready.admin
    }
}

/// One HTTP request on loopback; the status and the body.
public func http(
    _ method: String, _ url: String, _ body: String? = nil, bearer: String? = nil, headers: [String: String] = [:]
) async throws -> (Int, Data) {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    if let body {
        request.httpBody = Data(body.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }
    if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
}

/// `herald mock-apns` as its own process (it outlives the gateways it serves), and the
/// `HERALD_APNS_*` environment that points `herald serve` at it.
public struct MockAPNsProcess: Sendable {
    public let process: HeraldProcess
    /// The control server's base URL.
    public let control: String
    public let serveEnvironment: [String: String]

    public init(directory: URL, topic: String) throws {
        let readyPipe = Pipe()
        process = try HeraldProcess(
            ["mock-apns", "--port", "0", "--sandbox-port", "0", "--control-port", "0", "--cert-out", directory.path, "--topic", topic],
            environment: [:], stdout: readyPipe)
        let (ready, port, controlPort) = try readyLine(readyPipe, of: "herald mock-apns", from: process)
        control = "http://127.0.0.1:\(controlPort)"
        serveEnvironment = [
            "HERALD_APNS_URL": "https://127.0.0.1:\(port)", "HERALD_APNS_SANDBOX_URL": "https://127.0.0.1:\(ready["sandbox_port"] as? Int ?? 0)",
            "HERALD_APNS_CA_FILE": ready["ca"] as? String ?? "",
            "HERALD_APNS_KEY_PATH": ready["key_path"] as? String ?? "", "HERALD_APNS_KEY_ID": ready["key_id"] as? String ?? "",
            "HERALD_APNS_TEAM_ID": ready["team_id"] as? String ?? "", "HERALD_APNS_TOPIC": topic,
        ]
    }

    /// The simulator's `accepted` count.
    public func accepted() async throws -> Int {
        let (_, data) = try await http("GET", control + "/stats")
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["accepted"] as? Int ?? 0
    }

    /// Distinct provider tokens (JWTs) the simulator has seen, per key id.
    public func providerTokens() async throws -> [String: Int] {
        let (_, data) = try await http("GET", control + "/stats")
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["provider_tokens"] as? [String: Int] ?? [:]
    }

    /// Every push it recorded: the distinct tokens and the total.
    public func delivered() async throws -> (tokens: Set<String>, total: Int) {
        let (_, data) = try await http("GET", control + "/notifications")
        let list = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
        return (Set(list.compactMap { $0["token"] as? String }), list.count)
    }
}

extension MockAPNsProcess {
    /// The pushes to one device token, oldest first.
    public func notifications(token: String) async throws -> [[String: Any]] {
        let (_, data) = try await http("GET", control + "/notifications?token=" + token)
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
    }
}

/// `herald mock-fcm` as a child process, with the `HERALD_FCM_*` settings that point at it.
public struct MockFCMProcess: Sendable {
    public let process: HeraldProcess
    /// The control server's base URL.
    public let control: String
    public let serveEnvironment: [String: String]

    public init(directory: URL) throws {
        let readyPipe = Pipe()
        process = try HeraldProcess(
            ["mock-fcm", "--port", "0", "--control-port", "0", "--credentials-out", directory.path], environment: [:], stdout: readyPipe)
        let (ready, port, controlPort) = try readyLine(readyPipe, of: "herald mock-fcm", from: process)
        control = "http://127.0.0.1:\(controlPort)"
        serveEnvironment = [
            "HERALD_FCM_CREDENTIALS_FILE": ready["credentials"] as? String ?? "", "HERALD_FCM_URL": "https://127.0.0.1:\(port)",
            "HERALD_FCM_CA_FILE": ready["ca"] as? String ?? "",
        ]
    }

    /// The simulator's counters (`accepted`, `rejected`, `token_grants`).
    public func stats() async throws -> [String: Any] {
        let (_, data) = try await http("GET", control + "/stats")
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    /// Every message it accepted: the distinct tokens and the total.
    public func delivered() async throws -> (tokens: Set<String>, total: Int) {
        let (_, data) = try await http("GET", control + "/notifications")
        let list = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["notifications"] as? [[String: Any]] ?? []
        return (Set(list.compactMap { $0["token"] as? String }), list.count)
    }
}

/// `herald mock-webpush` as a child process: a second push service origin, with the
/// `HERALD_WEBPUSH_*` settings that let `herald serve` reach it on 127.0.0.1.
public struct MockWebPushProcess: Sendable {
    public let process: HeraldProcess
    /// The control server's base URL.
    public let control: String
    public let serveEnvironment: [String: String]

    /// Listens on `host` (another loopback address is another origin), writing its CA into `directory`.
    public init(directory: URL, host: String = "127.0.0.1", http1Only: Bool = false) throws {
        let readyPipe = Pipe()
        process = try HeraldProcess(
            ["mock-webpush", "--host", host, "--port", "0", "--control-port", "0", "--ca-out", directory.path] + (http1Only ? ["--http1-only"] : []),
            environment: [:], stdout: readyPipe)
        let (ready, port, controlPort) = try readyLine(readyPipe, of: "herald mock-webpush", from: process)
        control = "http://\(host):\(controlPort)"
        serveEnvironment = ["HERALD_WEBPUSH_ALLOW_HOSTS": "\(host):\(port)", "HERALD_WEBPUSH_CA_FILE": ready["ca"] as? String ?? ""]
    }
}

/// A simulator's first stdout line: its JSON and the two ports it names.
public func readyLine(_ pipe: Pipe, of command: String, from process: HeraldProcess) throws -> (json: [String: Any], port: Int, controlPort: Int) {
    let data = try firstLine(of: pipe, from: process.process, command: command) { process.fullLog() }
    guard let ready = try JSONSerialization.jsonObject(with: data.split(separator: UInt8(ascii: "\n"))[0]) as? [String: Any],
        let port = ready["port"] as? Int, let controlPort = ready["control_port"] as? Int
    else { throw CLIError("\(command) printed no ports") }
    return (ready, port, controlPort)
}

/// Reads `pipe` up to its first line break. A process that prints none within `seconds` hangs:
/// it is killed, so the read ends and the error carries its log.
func firstLine(of pipe: Pipe, from process: Process, command: String, seconds: Double = 120, log: () -> String) throws -> Data {
    let answered = Mutex(false)
    let pid = process.processIdentifier
    DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
        if !answered.withLock({ $0 }) { Foundation.kill(pid, SIGKILL) }
    }
    defer { answered.withLock { $0 = true } }
    var line = Data()
    while !line.contains(UInt8(ascii: "\n")) {
        let chunk = pipe.fileHandleForReading.availableData
        if chunk.isEmpty { throw CLIError("\(command) exited (or printed nothing for \(Int(seconds)) s and was killed) before it was ready: \(log())") }
        line += chunk
    }
    return line
}

/// A push payload as received, without the app's signature attached as its last member
/// (docs/signed-pushes.md): the document Herald rendered, for tests that compare it exactly.
public func withoutSignature(_ payload: String) -> String {
    payload.replacing(/,?"herald_signature":"[0-9]+\.[A-Za-z0-9_-]+"\}$/, with: "}")
}

/// A signing key file made by `herald signing-key` in a new folder under `directory`: instances
/// sharing a PostgreSQL database must all sign with one key file (a key made at start is refused there).
public func signingKeyFile(in directory: URL = FileManager.default.temporaryDirectory) throws -> String {
    let folder = directory.appendingPathComponent("herald-signing-key-\(UUID())").path
    let made = try runProcess(try heraldExecutable(), ["signing-key", "--out", folder])
    guard made.status == 0, let path = made.lastJSONLine["private_key_path"] as? String else {
        throw CLIError("herald signing-key failed: \(String(decoding: made.stderr, as: UTF8.self))")
    }
    return path
}
