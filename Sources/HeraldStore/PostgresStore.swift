import Foundation
public import Logging
import PostgresNIO
import Synchronization

/// The `Store` on PostgreSQL (a `postgres://` URL), through postgres-nio's
/// connection pool. The schema is SQLite's in meaning (`Schema`), and several Herald instances
/// may share one database: claims take rows with `FOR UPDATE SKIP LOCKED`.
///
/// Call `run()` in a long-running task (it drives the pool) before using the store.
public final class PostgresStore: Store {
    let client: PostgresClient
    let logger: Logger

    /// Where the server is, for messages (never the password).
    public let address: String
    /// How long a call waits for a pooled connection before it is `StoreUnavailable`; nil waits as
    /// long as the pool does (its connect timeout, which an outage can outlast). `herald serve`
    /// sets it so an API caller gets a 503 instead of a hung request.
    public let connectionWait: Duration?
    /// How long an outbox call (claim, outcome, expiry) waits for the database's answer once it has
    /// a connection; then the connection is closed and the call is `StoreUnavailable`, to be tried
    /// again on another. A connection opened while the server restarted can stay open and never
    /// answer: without this, the lane that sent on it waited for ever.
    public let laneAnswerDeadline: Duration
    /// How long any other call (the API's) waits for the database's answer once it has a
    /// connection, past `connectionWait`; then it is `StoreUnavailable` (a 503) and the connection
    /// closed. nil waits as long as the database takes. A pooled connection the database stopped
    /// answering is handed out at once, so `connectionWait` alone does not bound it.
    public let answerDeadline: Duration?
    /// When a call last had its answer from the database: a busy pool is one that still answers.
    let progress = DatabaseProgress()

    /// - Parameter url: `postgres://user:password@host:port/database[?sslmode=…&sslrootcert=…]`,
    ///   TLS as libpq reads it (`PostgresTLSMode`; default `prefer`).
    public init(
        url: String, connectionWait: Duration? = nil, laneAnswerDeadline: Duration = .seconds(30), answerDeadline: Duration? = nil,
        logger: Logger = Logger(label: "herald.postgres")
    ) throws {
        self.connectionWait = connectionWait
        self.laneAnswerDeadline = laneAnswerDeadline
        self.answerDeadline = answerDeadline
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty, let user = components.user
        else {
            throw PostgresStoreError("\(url.prefix(11))… is not postgres://user:password@host:port/database")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        let port = components.port ?? 5432
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: user, password: components.password,
            database: database.isEmpty ? nil : database, tls: try PostgresTLSMode(query: components.queryItems ?? [], host: host).tls)
        configuration.options.connectTimeout = .seconds(10)
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.logger = logger
        address = "\(host):\(port)"
    }

    /// Drives the connection pool until the task is cancelled.
    public func run() async {
        await client.run()
    }

    /// The outbox's claims and outcomes wait at most this for a pooled connection, then try again:
    /// a connection the pool never finishes opening (seen when the server comes back mid-handshake)
    /// must not hold a lane for ever.
    static let laneConnectionWait: Duration = .seconds(10)
    /// The longest a call with a wait waits on a pool that is busy but answering.
    static let busyCeiling: Duration = .seconds(10)
    /// A pool whose calls had an answer this recently is answering.
    static let progressWindow: Duration = .milliseconds(500)
    /// How long a cancelled call with a connection may finish its query before the connection is
    /// closed under it: shutdown must end within ServiceLifecycle's grace.
    static let cancellationGrace: Duration = .seconds(2)

    /// `body` on a pooled connection. A failure before the connection was handed out (the pool
    /// could not reach the database: refused, timed out, its circuit breaker open) is
    /// `StoreUnavailable`, which the API answers 503. With `wait`, the call gives up when no
    /// connection came within it and no other call had an answer from the database meanwhile (an
    /// outage), and waits on while others do (a pool merely busy: 50 concurrent enqueues on 20
    /// connections took longer than 1.5 s on a loaded 2-core machine), up to `busyCeiling`.
    /// Without, it waits as long as the pool does (its connect timeout). A wait can still starve
    /// a connection slower than it to open, by cancelling the request that waited for it: the
    /// default is none, and `herald serve` chooses. With `answering`, a call that got its
    /// connection gives up when the database has not answered `answering` after the connection
    /// wait ended, and closes the connection (default `answerDeadline`). A cancelled call with a connection closes it after `cancellationGrace`.
    func leased<R: Sendable>(
        waiting: Duration? = nil, answering: Duration? = nil, _ body: @escaping @Sendable (PostgresConnection) async throws -> R
    ) async throws -> R {
        let wait = waiting ?? connectionWait
        let answering = answering ?? answerDeadline
        let (client, address, progress) = (client, address, progress)
        guard let wait else {
            let leased = LeaseFlag()
            do {
                return try await client.withConnection { connection in
                    leased.started.store(true, ordering: .sequentiallyConsistent)
                    let value = try await body(connection)
                    progress.answered()
                    return value
                }
            } catch {
                guard !leased.started.load(ordering: .sequentiallyConsistent) || Self.isConnectionFailure(error), !(error is CancellationError) else { throw error }
                throw StoreUnavailable(address: address, cause: "\(error)")
            }
        }
        // The lease and its deadline race in tasks of their own, so the call returns at the
        // deadline even when the pool's request does not end on cancellation (one left waiting on
        // a connection that never opens, seen after a server restart, held a lane for good).
        let race = LeaseRace<R>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                race.start(continuation)
                race.add(Task {
                    do {
                        let value = try await client.withConnection { connection in
                            // Given up on already: the body never runs after its caller was told no.
                            guard race.connected(connection) else { throw CancellationError() }
                            let value = try await body(connection)
                            progress.answered()
                            return value
                        }
                        race.settle(.success(value))
                    } catch {
                        race.settle(.failure(
                            (race.isConnected && !Self.isConnectionFailure(error)) || error is CancellationError
                                ? error : StoreUnavailable(address: address, cause: "\(error)")))
                    }
                })
                race.add(Task {
                    do {
                        try await Task.sleep(for: wait)
                        // Others still have answers: the pool is busy, not cut off from the database.
                        var waited = wait
                        while waited < Self.busyCeiling, progress.answered(within: Self.progressWindow) {
                            try await Task.sleep(for: Self.progressWindow)
                            waited += Self.progressWindow
                        }
                    } catch {
                        return
                    }
                    // Without a connection by now, give up; with one, let it finish within `answering`.
                    race.giveUpUnlessConnected(StoreUnavailable(address: address, cause: "no connection, and no answer from the database, within \(wait)"))
                    guard let answering, (try? await Task.sleep(for: answering)) != nil else { return }
                    await race.abandon(StoreUnavailable(address: address, cause: "no answer from the database within \(answering)"))
                })
            }
        } onCancel: {
            race.cancel(grace: Self.cancellationGrace)
        }
    }

    /// A failure of the connection, not of the statement (closed, reset, its TLS, the pool shut):
    /// the database is out of reach, which the caller may try again (503), never a bug (500).
    static func isConnectionFailure(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError else { return false }
        return [.serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown, .poolClosed].contains(error.code)
    }

    public func migrate() async throws {
        try await migrate(upTo: nil)
    }

    /// The schema up to and including `last` (nil: every version): a database as an older
    /// Herald left it, for the migration tests.
    package func migrate(upTo last: String?) async throws {
        try await client.withTransaction(logger: logger) { db in
            // Instances starting together migrate one after another.
            try await db.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
            try await db.query(
                "CREATE TABLE IF NOT EXISTS herald_migrations (version TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)",
                logger: logger)
            var applied = Set<String>()
            for try await version in try await db.query("SELECT version FROM herald_migrations", logger: logger).decode(String.self) {
                applied.insert(version)
            }
            var all = Schema.versions.map { ($0.0, Self.postgresStatements($0.1)) }
            all.append((Schema.countersVersion, Schema.postgresCounters))
            all += (Schema.laterVersions + Schema.routeVersions).map { ($0.0, Self.postgresStatements($0.1)) }
            for (version, statements) in all {
                if !applied.contains(version) {
                    for statement in statements {
                        try await db.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                    }
                    try await db.query(
                        "INSERT INTO herald_migrations (version, applied_at) VALUES (\(version), \(Date().milliseconds))", logger: logger)
                }
                if version == last { break }
            }
        }
    }

    static let migrationLock: Int64 = 0x4845_5241_4C44  // "HERALD"

    /// SQLite's schema in PostgreSQL's words, one statement at a time.
    static func postgresStatements(_ sql: String) -> [String] {
        sql.replacingOccurrences(of: "INTEGER PRIMARY KEY", with: "BIGSERIAL PRIMARY KEY")
            .replacingOccurrences(of: "BLOB", with: "BYTEA")
            .split(separator: ";").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }

}
