import Foundation
import HeraldPushCore
import NIOCore
import ServiceLifecycle

/// A built-in simulator as a service: it runs until the group stops it, then `stop` closes it.
struct StopAtShutdown: Service {
    let stop: @Sendable () async -> Void

    func run() async throws {
        try? await gracefulShutdown()
        await stop()
    }
}

/// A service whose bind failure names the variable that chose its port.
struct PortNamingService: Service {
    let service: any Service
    let field: String
    let port: Int

    init(_ service: any Service, field: String, port: Int) {
        (self.service, self.field, self.port) = (service, field, port)
    }

    func run() async throws {
        do { try await service.run() } catch { throw PortInUse.named(error, field, port: port) }
    }
}

/// Reports, once the API and the admin listener both listen, where they do.
public actor ReadinessLine {
    private let host: String
    private let adminHost: String
    /// The built-in simulators whose control API the admin listener carries.
    private let simulators: Set<String>
    private let report: @Sendable (ListeningAddresses) -> Void
    private var apiPort: Int?
    private var adminPort: Int?

    init(host: String, adminHost: String, simulators: Set<String>, report: @escaping @Sendable (ListeningAddresses) -> Void) {
        (self.host, self.adminHost, self.simulators, self.report) = (host, adminHost, simulators, report)
    }

    func api(_ port: Int) {
        apiPort = port
        reportWhenBoth()
    }

    func admin(_ port: Int) {
        adminPort = port
        reportWhenBoth()
    }

    private func reportWhenBoth() {
        guard let apiPort, let adminPort else { return }
        report(ListeningAddresses(api: host, apiPort: apiPort, admin: adminHost, adminPort: adminPort, simulators: simulators))
    }

    /// `{"ready":true,"http":"127.0.0.1:8080","admin":"127.0.0.1:8081","simulator_control":"http://127.0.0.1:8081/simulators/apns",…}`
    /// on standard output: `herald serve`'s line for scripts and tests.
    @Sendable public static func print(_ addresses: ListeningAddresses) {
        var line: [String: Any] = ["ready": true, "http": "\(addresses.api):\(addresses.apiPort)", "admin": "\(addresses.admin):\(addresses.adminPort)"]
        let admin = addresses.admin.contains(":") ? "[\(addresses.admin)]:\(addresses.adminPort)" : "\(addresses.admin):\(addresses.adminPort)"
        for (field, name) in [("simulator_control", "apns"), ("fcm_simulator_control", "fcm"), ("webpush_simulator_control", "webpush")] {
            line[field] = addresses.simulators.contains(name) ? "http://\(admin)/simulators/\(name)" : NSNull()
        }
        guard let data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}

/// A port another process holds, reported as the variable that chose it (exit 2), not as a
/// socket call's error.
enum PortInUse {
    static func named(_ error: any Error, _ field: String, port: Int) -> any Error {
        // NIO's bind error, possibly inside the server's own error.
        guard (error as? IOError)?.errnoCode == EADDRINUSE || "\(error)".contains("Address already in use") else { return error }
        return HeraldConfigurationError(field: field, message: "port \(port) is in use by another process")
    }
}
