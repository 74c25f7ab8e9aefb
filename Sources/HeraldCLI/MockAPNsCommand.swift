import ArgumentParser
import Crypto
import Foundation
import HeraldAPNsSimulator
import HeraldPushCore
import Logging
import NIOCore
import NIOPosix

/// `herald mock-apns`: the APNs simulator as its own process.
struct MockAPNsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock-apns",
        abstract: "Run the APNs simulator: HTTP/2 over TLS that checks what Apple checks, with fault injection.")

    @Option(help: "The production host's HTTP/2 port (0 picks a free one).")
    var port = 2197

    @Option(name: .customLong("sandbox-port"), help: "The sandbox host's HTTP/2 port (0 picks a free one).")
    var sandboxPort = 2196

    @Option(name: .customLong("control-port"), help: "The plain-HTTP control port (0 picks a free one).")
    var controlPort = 2198

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(name: .customLong("public-key"), help: "A trusted key as KID:TEAM:PEMFILE (repeatable).")
    var publicKeys: [String] = []

    @Option(name: .customLong("topic"), help: "An accepted apns-topic (repeatable; none accepts any).")
    var topics: [String] = []

    @Option(name: .customLong("cert-out"), help: "Where to write ca.pem, herald.env (and the generated .p8).")
    var certOut: String?

    func run() async throws {
        // Listening before the readiness line: a SIGTERM sent right after it is not lost.
        let signals = SignalWaiter()
        CLILogging.bootstrap()
        let logger = Logger(label: "herald.mock-apns")
        var configuration = APNsSimulatorConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.sandboxPort = sandboxPort
        configuration.controlPort = controlPort
        configuration.topics = Set(topics)
        let directory = URL(fileURLWithPath: try certOut ?? PrivateFile.temporaryFolder(prefix: "herald-mock-apns")).standardizedFileURL.path
        var output: [String: Any] = [:]
        do {
            configuration.keys = try publicKeys.map(SimulatorKey.init(argument:))
        } catch {
            throw HeraldConfigurationError(field: "--public-key", message: "\(error)")
        }
        if configuration.keys.isEmpty {
            let generated = try GeneratedKey.write(to: directory)
            configuration.keys = [generated.key]
            output["key_id"] = generated.key.keyID
            output["team_id"] = generated.key.teamID
            output["key_path"] = generated.path
        }

        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        let simulator = try await APNsSimulator.start(configuration: configuration, eventLoopGroup: group, logger: logger)
        let caPath = try simulator.writeCA(to: directory)
        output["ready"] = true
        output["port"] = simulator.port
        output["sandbox_port"] = simulator.sandboxPort
        output["control_port"] = (simulator.controlPort ?? 0)
        output["ca"] = caPath
        try writeEnvironment(to: directory, port: simulator.port, sandboxPort: simulator.sandboxPort, caPath: caPath, output: output)
        CLIOutput.printJSON(output)
        logger.info("mock-apns listening", metadata: [
            "port": "\(simulator.port)", "sandbox_port": "\(simulator.sandboxPort)", "control_port": "\((simulator.controlPort ?? 0))",
        ])

        _ = await signals.termination()
        await simulator.shutdown()
        try await group.shutdownGracefully()
    }
}

extension MockAPNsCommand {
    /// Writes `herald.env`: `source` it and `herald send` talks to this simulator.
    func writeEnvironment(to directory: String, port: Int, sandboxPort: Int, caPath: String, output: [String: Any]) throws {
        var lines = [
            "export HERALD_APNS_URL=https://\(host):\(port)",
            "export HERALD_APNS_SANDBOX_URL=https://\(host):\(sandboxPort)",
            "export HERALD_APNS_CA_FILE=\(caPath)",
            "export HERALD_APNS_TOPIC=\(topics.first ?? "com.example.app")",
        ]
        if let keyPath = output["key_path"] as? String, let keyID = output["key_id"] as? String,
            let teamID = output["team_id"] as? String
        {
            lines += [
                "export HERALD_APNS_KEY_PATH=\(keyPath)", "export HERALD_APNS_KEY_ID=\(keyID)",
                "export HERALD_APNS_TEAM_ID=\(teamID)",
            ]
        }
        let path = (directory as NSString).appendingPathComponent("herald.env")
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
}

/// A key pair made for a simulator started without `--public-key`.
enum GeneratedKey {
    static func write(to directory: String) throws -> (key: SimulatorKey, path: String) {
        let privateKey = P256.Signing.PrivateKey()
        let keyID = randomID()
        let teamID = randomID()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = (directory as NSString).appendingPathComponent("AuthKey_\(keyID).p8")
        guard PrivateFile.create(path, contents: Data(privateKey.pemRepresentation.utf8))
        else { throw HeraldConfigurationError(field: "--cert-out", message: "cannot write \(path)") }
        return (SimulatorKey(keyID: keyID, teamID: teamID, publicKey: privateKey.publicKey), path)
    }

    /// Ten characters of A-Z0-9, the shape of Apple's key and team ids.
    static func randomID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String((0..<10).map { _ in alphabet.randomElement()! })
    }
}
