import ArgumentParser
import Foundation
import HeraldFCM
import HeraldFCMCore
import HeraldFCMSimulator
import HeraldPushCore
import HeraldSimulatorSupport
import Logging

/// `herald mock-fcm`: the FCM simulator as its own process.
struct MockFCMCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock-fcm",
        abstract: "Run the FCM simulator: OAuth grants and messages:send over TLS (HTTP/2 and HTTP/1.1), with a control port.")

    @Option(help: "The TLS port (0 picks a free one).")
    var port = 0

    @Option(name: .customLong("control-port"), help: "The plain-HTTP control port (0 picks a free one).")
    var controlPort = 0

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(name: .customLong("project-id"), help: "The Firebase project messages may be sent for.")
    var projectID = "herald-simulator"

    @Option(name: .customLong("credentials-out"), help: "Where to write service-account.json (its token_uri points here), ca.pem and herald.env.")
    var credentialsOut: String?

    func run() async throws {
        // Listening before the readiness line: a SIGTERM sent right after it is not lost.
        let signals = SignalWaiter()
        CLILogging.bootstrap()
        let logger = Logger(label: "herald.mock-fcm")
        guard (0...65_535).contains(port) else { throw HeraldConfigurationError(field: "--port", message: "is a port number from 0 to 65535") }
        guard (0...65_535).contains(controlPort) else { throw HeraldConfigurationError(field: "--control-port", message: "is a port number from 0 to 65535") }
        guard FCMServiceAccount.isProjectID(projectID) else {
            throw HeraldConfigurationError(field: "--project-id", message: "is a Firebase project id (letters, digits, -)")
        }
        var configuration = FCMSimulator.Configuration()
        configuration.host = host
        configuration.port = port
        configuration.controlPort = controlPort
        configuration.projectID = projectID
        let simulator = try await FCMSimulator.start(configuration: configuration, logger: logger)
        let directory = URL(fileURLWithPath: try credentialsOut ?? PrivateFile.temporaryFolder(prefix: "herald-mock-fcm")).standardizedFileURL
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let credentials = directory.appendingPathComponent("service-account.json")
        // The account's private key: readable by its owner only.
        try? FileManager.default.removeItem(at: credentials)
        guard PrivateFile.create(credentials.path, contents: simulator.serviceAccountJSON) else {
            throw HeraldConfigurationError(field: "--credentials-out", message: "cannot write \(credentials.path)")
        }
        let ca = try simulator.tls.writeCA(to: directory.path)
        // `source herald.env` exports them, as `herald mock-apns`'s does.
        let env = """
            export HERALD_FCM_CREDENTIALS_FILE=\(credentials.path)
            export HERALD_FCM_URL=\(simulator.url.absoluteString)
            export HERALD_FCM_CA_FILE=\(ca)

            """
        try Data(env.utf8).write(to: directory.appendingPathComponent("herald.env"))
        CLIOutput.printJSON([
            "ready": true, "port": simulator.port, "control_port": (simulator.controlPort ?? 0), "ca": ca, "credentials": credentials.path,
            "project_id": projectID, "token_uri": simulator.tokenURL.absoluteString,
        ])
        logger.info("mock-fcm listening", metadata: ["port": "\(simulator.port)", "control_port": "\((simulator.controlPort ?? 0))"])
        _ = await signals.termination()
        await simulator.shutdown()
    }
}
