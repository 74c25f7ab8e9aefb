import ArgumentParser
import Foundation
import HeraldCore
import HeraldPushCore
import Logging

/// The `herald` command.
@main
struct Herald: AsyncParsableCommand {
    static let version = HeraldVersion.current

    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Herald: a self-hosted push gateway for end-to-end-encrypted messaging apps.",
        subcommands: [
            ServeCommand.self, MigrateCommand.self, CleanupCommand.self, DevicesCommand.self, MockAPNsCommand.self, MockFCMCommand.self, MockWebPushCommand.self, SendCommand.self,
            VAPIDKeysCommand.self, SigningKeyCommand.self, VersionCommand.self,
        ]
    )

    /// Bad input exits 2, not ArgumentParser's 64; help still exits 0.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var async = command as? any AsyncParsableCommand {
                try await async.run()
            } else {
                try command.run()
            }
        } catch let exit as ExitCode {
            Foundation.exit(exit.rawValue)
        } catch {
            if exitCode(for: error) == .success { self.exit(withError: error) }
            let message = fullMessage(for: error)
            CLIOutput.printJSON(["status": "invalid", "error": message])
            FileHandle.standardError.write(Data((message + "\n").utf8))
            Foundation.exit(2)
        }
    }
}

struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "version", abstract: "Print Herald's version and the commit it was built from.")
    func run() { print("herald \(Herald.version) (commit \(BuildInfo.commit))") }
}

/// Logging to standard error, at `HERALD_LOG_LEVEL` (default info), as text or, with
/// `HERALD_LOG_FORMAT=json`, one JSON object per line; standard output stays one JSON line for
/// scripts. A format Herald does not know ends the command (exit 2) naming the variable.
enum CLILogging {
    static func bootstrap() {
        let environment = ProcessInfo.processInfo.environment
        var level = Logger.Level.info
        if let text = environment["HERALD_LOG_LEVEL"], !text.isEmpty {
            guard let parsed = Logger.Level(rawValue: text.lowercased()) else {
                Foundation.exit(CLIOutput.invalid(
                    field: "HERALD_LOG_LEVEL", message: "is trace, debug, info, notice, warning, error or critical, not \(text)").rawValue)
            }
            level = parsed
        }
        switch environment["HERALD_LOG_FORMAT"] ?? "text" {
        case "text":
            LoggingSystem.bootstrap { label in TextLogHandler(label: label, level: level) }
        case "json":
            let output = JSONLogOutput()
            LoggingSystem.bootstrap { label in JSONLogHandler(label: label, level: level, output: output) }
        default:
            Foundation.exit(CLIOutput.invalid(field: "HERALD_LOG_FORMAT", message: "is text or json").rawValue)
        }
    }
}

enum CLIOutput {
    /// Bad input: one JSON line naming the field, then exit 2.
    static func invalid(field: String, message: String, reason: String? = nil) -> ExitCode {
        var line = ["status": "invalid", "field": field, "error": message]
        if let reason { line["reason"] = reason }
        printJSON(line)
        return ExitCode(2)
    }

    /// `body`'s result; a setting it cannot use (APNs, FCM, transport and serve settings alike)
    /// prints one JSON line naming the field, then exit 2.
    static func namingTheField<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch let error as HeraldConfigurationError { throw invalid(field: error.field, message: error.message) }
    }

    static func namingTheField<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let error as HeraldConfigurationError { throw invalid(field: error.field, message: error.message) }
    }

    /// Prints one JSON line with sorted keys and flushes it.
    static func printJSON(_ object: [String: Any]) {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}
