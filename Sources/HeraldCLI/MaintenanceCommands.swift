import ArgumentParser
import Foundation
import HeraldApp
import HeraldDelivery
import HeraldServer
import HeraldStore

/// `herald migrate`: brings the database schema to this version's, then exits.
struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "migrate", abstract: "Apply database migrations (HERALD_DATABASE_URL).")

    func run() async throws {
        let settings = try ServeSettings.load()
        try await CLIOutput.namingTheField { try await settings.withStore { _ in } }
        CLIOutput.printJSON(["migrated": true, "database": settings.databaseDescription])
    }
}

/// `herald cleanup`: removes devices not seen for `HERALD_STALE_AFTER_DAYS` (default 90), prints the count.
struct CleanupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cleanup", abstract: "Remove devices not seen for HERALD_STALE_AFTER_DAYS days (default 90).")

    func run() async throws {
        let settings = try ServeSettings.load()
        let removed = try await CLIOutput.namingTheField {
            try await settings.withStore { store in try await StaleDeviceCleanup(store: store, staleAfterDays: settings.staleAfterDays).once() }
        }
        CLIOutput.printJSON(["removed": removed, "stale_after_days": settings.staleAfterDays])
    }
}
