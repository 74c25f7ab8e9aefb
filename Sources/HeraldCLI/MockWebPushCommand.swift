import ArgumentParser
import Foundation
import HeraldPushCore
import HeraldSimulatorSupport
import HeraldWebPushSimulator
import Logging

/// `herald mock-webpush`: the Web Push simulator as its own process.
struct MockWebPushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock-webpush",
        abstract: "Run the Web Push simulator: subscriptions, VAPID checks and decryption over TLS, with a control port.")

    @Option(help: "The TLS port (0 picks a free one).")
    var port = 0

    @Option(name: .customLong("control-port"), help: "The plain-HTTP control port (0 picks a free one).")
    var controlPort = 0

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Flag(name: .customLong("http1-only"), help: "Offer only HTTP/1.1 (a small UnifiedPush server), not HTTP/2.")
    var http1Only = false

    @Option(name: .customLong("ca-out"), help: "The directory to write the simulator's CA (ca.pem) to.")
    var caOut: String?

    func run() async throws {
        // Listening before the readiness line: a SIGTERM sent right after it is not lost.
        let signals = SignalWaiter()
        CLILogging.bootstrap()
        let logger = Logger(label: "herald.mock-webpush")
        guard (0...65_535).contains(port) else { throw HeraldConfigurationError(field: "--port", message: "is a port number from 0 to 65535") }
        guard (0...65_535).contains(controlPort) else { throw HeraldConfigurationError(field: "--control-port", message: "is a port number from 0 to 65535") }
        var configuration = WebPushSimulator.Configuration()
        configuration.host = host
        configuration.port = port
        configuration.controlPort = controlPort
        configuration.offersHTTP2 = !http1Only
        let simulator = try await WebPushSimulator.start(configuration: configuration, logger: logger)
        let directory = try caOut ?? PrivateFile.temporaryFolder(prefix: "herald-mock-webpush")
        let ca = try simulator.tls.writeCA(to: directory)
        let allowed = "\(host.contains(":") ? "[\(host)]" : host):\(simulator.port)"
        CLIOutput.printJSON([
            "ready": true, "origin": simulator.origin, "port": simulator.port, "control_port": (simulator.controlPort ?? 0), "ca": ca,
            "env": "HERALD_WEBPUSH_ALLOW_HOSTS=\(allowed) HERALD_WEBPUSH_CA_FILE=\(ca)",
        ])
        logger.info("mock-webpush listening", metadata: ["origin": "\(simulator.origin)", "control_port": "\((simulator.controlPort ?? 0))"])
        _ = await signals.termination()
        await simulator.shutdown()
    }
}
