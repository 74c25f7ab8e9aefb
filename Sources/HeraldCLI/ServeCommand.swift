import ArgumentParser
import Foundation
import HeraldApp
import HeraldServer
import HeraldDelivery
import Logging
import Metrics

/// `herald serve`: the gateway, configured by the `HERALD_*` environment (or `HERALD_CONFIG`).
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the gateway (HERALD_* environment; with no APNs credentials, the built-in APNs simulator).")

    func run() async throws {
        CLILogging.bootstrap()
        let logger = Logger(label: "herald")
        // Descriptors are what slow clients and many push-service origins exhaust first.
        OpenFileLimit.raiseToHardLimit()
        let settings = try ServeSettings.load()
        let metrics = HeraldMetrics.prometheus()
        // Hummingbird's request metrics go through the global system: the same registry.
        MetricsSystem.bootstrap(metrics.0.factory)
        try await CLIOutput.namingTheField {
            try await settings.withStore { store in
                try await buildApplication(settings: settings, store: store, metrics: metrics, logger: logger).run()
            }
        }
        // The last line of a clean stop: what was in flight is recorded and the store is closed.
        logger.info("shutdown finished: pushes in flight recorded, store closed")
    }
}

extension ServeSettings {
    /// Reads the process environment; bad values print `{"status":"invalid",…}` and exit 2.
    static func load() throws -> ServeSettings {
        try CLIOutput.namingTheField { try ServeSettings(environment: ProcessInfo.processInfo.environment) }
    }
}
