import Foundation
import Logging
import NIOSSL
import PostgresNIO

/// Fresh databases on a test PostgreSQL server (`HERALD_TEST_POSTGRES_URL`).
public enum TestPostgres {
    /// The server's URL, when the environment names one.
    public static var serverURL: String? {
        ProcessInfo.processInfo.environment["HERALD_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Creates a database, runs `body` with its URL, then drops it.
    public static func withDatabase(serverURL: String, _ body: (String) async throws -> Void) async throws {
        guard var components = URLComponents(string: serverURL), let host = components.host, let user = components.user else {
            throw PostgresError("HERALD_TEST_POSTGRES_URL is postgres://user:password@host:port/database")
        }
        let admin = Self.client(components, host: host, user: user, database: "postgres")
        let running = Task { await admin.run() }
        defer { running.cancel() }
        let name = "herald_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try await admin.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        components.path = "/" + name
        do {
            try await body(components.string!)
        } catch {
            try? await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(name) WITH (FORCE)"))
            throw error
        }
        try await admin.query(PostgresQuery(unsafeSQL: "DROP DATABASE \(name) WITH (FORCE)"))
    }

    /// Runs `statements` in order on the database `databaseURL` names (a test's own, from
    /// `withDatabase`): what an older Herald wrote, for the migration tests.
    public static func execute(_ statements: [String], databaseURL: String) async throws {
        guard let components = URLComponents(string: databaseURL), let host = components.host, let user = components.user else {
            throw PostgresError("not a postgres:// URL")
        }
        let client = Self.client(components, host: host, user: user, database: String(components.path.dropFirst()))
        let running = Task { await client.run() }
        defer { running.cancel() }
        for statement in statements { try await client.query(PostgresQuery(unsafeSQL: statement)) }
    }

    /// A client for `database` on the server `components` names. The test server takes TCP
    /// connections over TLS only; a test's connection does not check its certificate.
    static func client(_ components: URLComponents, host: String, user: String, database: String) -> PostgresClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        let plain = components.queryItems?.contains { $0.name == "sslmode" && $0.value == "disable" } ?? true
        return PostgresClient(
            configuration: .init(host: host, port: components.port ?? 5432, username: user, password: components.password,
                                 database: database, tls: plain ? .disable : .require(tls)),
            backgroundLogger: Logger(label: "herald.test.postgres"))
    }

    struct PostgresError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
