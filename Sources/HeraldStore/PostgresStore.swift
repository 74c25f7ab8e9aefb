import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldPushCore
import KasiaProtocol
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization

/// The `Store` on PostgreSQL (a `postgres://` URL), through postgres-nio's
/// connection pool. The schema is SQLite's in meaning (`Schema`), and several Herald instances
/// may share one database: claims take rows with `FOR UPDATE SKIP LOCKED`.
///
/// Call `run()` in a long-running task (it drives the pool) before using the store.
public final class PostgresStore: Store {
    private let client: PostgresClient
    private let logger: Logger

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
    private let progress = DatabaseProgress()

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

    // MARK: Registrations

    public func register(_ registrations: [Registration], now: Date) async throws -> [DeviceRecord] {
        return try await leased { [self] client in
            let ms = now.milliseconds
            return try await client.withTransaction(logger: logger) { db in
                var records: [DeviceRecord] = []
                for r in registrations {
                    try await db.query(
                        "INSERT INTO apps (id, created_at) VALUES (\(r.app), \(ms)) ON CONFLICT (id) DO NOTHING", logger: logger)
                    // A token registered again is alive, whatever a push service said of it before.
                    try await db.query("DELETE FROM dead_tokens WHERE app_id = \(r.app) AND token = \(r.token.value)", logger: logger)
                    let rows = try await db.query(
                        """
                        INSERT INTO devices (app_id, platform, token, attributes, device_id, created_at, updated_at, last_seen)
                        VALUES (\(r.app), \(r.token.platform.rawValue), \(r.token.value),
                          \(r.storedAttributes.storedForm), \(r.deviceID), \(ms), \(ms), \(ms))
                        ON CONFLICT (app_id, token) DO UPDATE SET platform = excluded.platform, attributes = excluded.attributes,
                          device_id = excluded.device_id,
                          updated_at = excluded.updated_at, last_seen = excluded.last_seen, disabled_reason = NULL, registered_by = NULL
                        RETURNING \(unescaped: Self.deviceColumns)
                        """, logger: logger)
                    guard let device = try await Self.devices(rows).first else { throw PostgresStoreError("the device was not written") }
                    try await Self.replaceWatchSet(db, deviceRowID: device.rowID, with: r.watchSet, logger: logger)
                    if r.replacesDeviceTokens, let deviceID = r.deviceID {
                        try await db.query(
                            "DELETE FROM devices WHERE app_id = \(r.app) AND device_id = \(deviceID) AND id <> \(device.rowID)", logger: logger)
                    }
                    records.append(device)
                }
                return records
            }
        }
    }

    public func admit(_ devices: [NamedDevice], now: Date) async throws -> [DeviceRecord?] {
        return try await leased { [self] client in
            let ms = now.milliseconds
            // Most notifies name a device already current: a read decides them, without a write.
            var settled: [DeviceRecord??] = []
            for d in devices {
                let rows = try await client.query(
                    """
                    SELECT \(unescaped: Self.deviceColumns), registered_by,
                      (SELECT dead_at FROM dead_tokens WHERE app_id = \(d.app) AND token = \(d.token.value))
                    FROM (SELECT 1) one LEFT JOIN devices ON app_id = \(d.app) AND token = \(d.token.value)
                    """, logger: logger)
                var decided: DeviceRecord?? = nil
                for try await row in rows {
                    let cells = Array(row)
                    let byMatrix = try cells[10].decode(String?.self) == "matrix"
                    let deadAt = try cells[11].decode(Int64?.self)
                    let device = try cells[0].decode(Int64?.self) == nil ? nil : try Self.device(row, from: 0)
                    decided = d.admittedWithoutWrite(device, deadAt: deadAt, now: now, ownedElsewhere: device != nil && !byMatrix)
                }
                guard decided != nil else { break }
                settled.append(decided)
            }
            if settled.count == devices.count { return settled.map { $0! } }
            return try await client.withTransaction(logger: logger) { db in
                var records: [DeviceRecord?] = []
                for d in devices {
                    let registered = d.registeredAt.milliseconds
                    var revived = false
                    let deadRows = try await db.query(
                        "SELECT dead_at FROM dead_tokens WHERE app_id = \(d.app) AND token = \(d.token.value) FOR UPDATE", logger: logger)
                    if let deadAt = try await deadRows.decode(Int64.self).first(where: { _ in true }) {
                        guard registered > deadAt else {
                            records.append(nil)
                            continue
                        }
                        try await db.query("DELETE FROM dead_tokens WHERE app_id = \(d.app) AND token = \(d.token.value)", logger: logger)
                        revived = true
                    }
                    try await db.query(
                        "INSERT INTO apps (id, created_at) VALUES (\(d.app), \(ms)) ON CONFLICT (id) DO NOTHING", logger: logger)
                    let rows = try await db.query(
                        """
                        INSERT INTO devices (app_id, platform, token, attributes, device_id, created_at, updated_at, last_seen, registered_by)
                        VALUES (\(d.app), \(d.token.platform.rawValue), \(d.token.value),
                          \(d.storedAttributes.storedForm), NULL, \(ms), \(registered), \(ms),
                          'matrix')
                        ON CONFLICT (app_id, token) DO UPDATE SET platform = excluded.platform, attributes = excluded.attributes,
                          updated_at = GREATEST(devices.updated_at, excluded.updated_at), last_seen = excluded.last_seen,
                          disabled_reason = CASE WHEN \(revived) THEN NULL ELSE devices.disabled_reason END
                        WHERE devices.registered_by = 'matrix'
                        RETURNING \(unescaped: Self.deviceColumns)
                        """, logger: logger)
                    // No row back: the device is another route's, and stays as it is.
                    var written = try await Self.devices(rows).first
                    if written == nil {
                        written = try await Self.devices(try await db.query(
                            "SELECT \(unescaped: Self.deviceColumns) FROM devices WHERE app_id = \(d.app) AND token = \(d.token.value)", logger: logger)).first
                        written?.registeredElsewhere = true
                    }
                    guard let device = written else { throw PostgresStoreError("the device was not written") }
                    records.append(device.disabledReason == nil ? device : nil)
                }
                return records
            }
        }
    }

    public func updateWatchSet(app: String, token: String, watchSet: WatchSet, now: Date) async throws -> Bool {
        return try await leased { [self] client in
            try await client.withTransaction(logger: logger) { db in
                let rows = try await db.query(
                    "UPDATE devices SET updated_at = \(now.milliseconds), last_seen = \(now.milliseconds) WHERE app_id = \(app) AND token = \(token) RETURNING id",
                    logger: logger)
                guard let id = try await rows.decode(Int64.self).first(where: { _ in true }) else { return false }
                try await Self.replaceWatchSet(db, deviceRowID: id, with: watchSet, logger: logger)
                return true
            }
        }
    }

    public func unregister(app: String, token: String) async throws -> Bool {
        return try await leased { [self] client in
            let rows = try await client.query("DELETE FROM devices WHERE app_id = \(app) AND token = \(token) RETURNING id", logger: logger)
            return try await rows.decode(Int64.self).first(where: { _ in true }) != nil
        }
    }

    public func unregister(app: String, deviceID: String) async throws -> Int {
        return try await leased { [self] client in
            try await Self.count(client.query("DELETE FROM devices WHERE app_id = \(app) AND device_id = \(deviceID) RETURNING id", logger: logger))
        }
    }

    public func status(app: String, token: String, now: Date) async throws -> (DeviceRecord, WatchSet)? {
        return try await leased { [self] client in
            let rows = try await client.query(
                "UPDATE devices SET last_seen = \(now.milliseconds) WHERE app_id = \(app) AND token = \(token) RETURNING \(unescaped: Self.deviceColumns)",
                logger: logger)
            guard let device = try await Self.devices(rows).first else { return nil }
            return (device, try await watchSets(rowIDs: [device.rowID])[device.rowID] ?? .empty)
        }
    }

    public func devices(app: String, watching key: String) async throws -> [DeviceRecord] {
        return try await leased { [self] client in
            try await Self.devices(client.query(
                """
                SELECT \(unescaped: Self.deviceColumns) FROM devices WHERE app_id = \(app) AND disabled_reason IS NULL AND id IN (
                  SELECT device_row FROM watch_keys WHERE key = \(key)
                  UNION SELECT device_row FROM contextual_routes WHERE peer = \(key))
                ORDER BY id
                """, logger: logger))
        }
    }

    public func watchSets(rowIDs: [Int64]) async throws -> [Int64: WatchSet] {
        return try await leased { [self] client in
            guard !rowIDs.isEmpty else { return [:] }
            var keys: [(Int64, String, String)] = []
            for try await row in try await client.query(
                "SELECT device_row, role, key FROM watch_keys WHERE device_row = ANY(\(rowIDs))", logger: logger
            ).decode((Int64, String, String).self) {
                keys.append(row)
            }
            var routes: [(Int64, String, String)] = []
            for try await row in try await client.query(
                "SELECT device_row, peer, alias FROM contextual_routes WHERE device_row = ANY(\(rowIDs))", logger: logger
            ).decode((Int64, String, String).self) {
                routes.append(row)
            }
            return StoreRows.watchSets(for: rowIDs, keys: keys, routes: routes)
        }
    }

    public func devices(app: String) async throws -> [DeviceRecord] {
        return try await leased { [self] client in
            try await Self.devices(client.query(
                "SELECT \(unescaped: Self.deviceColumns) FROM devices WHERE app_id = \(app) AND disabled_reason IS NULL ORDER BY id",
                logger: logger))
        }
    }

    public func devices(app: String, tokens: [String]) async throws -> [DeviceRecord] {
        return try await leased { [self] client in
            guard !tokens.isEmpty else { return [] }
            return try await Self.devices(client.query(
                "SELECT \(unescaped: Self.deviceColumns) FROM devices WHERE app_id = \(app) AND disabled_reason IS NULL AND token = ANY(\(tokens)) ORDER BY id",
                logger: logger))
        }
    }

    public func devices(app: String, deviceIDs: [String]) async throws -> [DeviceRecord] {
        return try await leased { [self] client in
            guard !deviceIDs.isEmpty else { return [] }
            return try await Self.devices(client.query(
                "SELECT \(unescaped: Self.deviceColumns) FROM devices WHERE app_id = \(app) AND disabled_reason IS NULL AND device_id = ANY(\(deviceIDs)) ORDER BY id",
                logger: logger))
        }
    }

    // MARK: Events

    /// Claims nothing at enqueue (each instance's lanes claim with `SKIP LOCKED`): every lane of
    /// the events' apps is told to look.
    public func enqueue(_ events: [NewEvent], checkpoint: ChainCheckpoint?, now: Date, claim: DirectClaim?) async throws -> EnqueueResult {
        .allPending(created: try await insert(events, checkpoint: checkpoint, now: now), events: events)
    }

    private func insert(_ events: [NewEvent], checkpoint: ChainCheckpoint?, now: Date) async throws -> [String: Int] {
        return try await leased { [self] client in
            let ms = now.milliseconds
            // Three statements per call, whatever the number of events: arrays through unnest.
            return try await client.withTransaction(logger: logger) { db in
                var created: [String: Int] = [:]
                var firstOfKey = Set<String>()
                // Within one call the first event of a dedupe key wins, as it would one by one.
                let events = events.filter { event in event.dedupeKey.map { firstOfKey.insert($0).inserted } ?? true }
                if !events.isEmpty {
                    let apps = Array(Set(events.map(\.app))).sorted()
                    try await db.query(
                        "INSERT INTO apps (id, created_at) SELECT a, \(ms) FROM unnest(\(apps)::TEXT[]) AS t(a) ON CONFLICT (id) DO NOTHING",
                        logger: logger)
                    let ids = events.map(\.id)
                    let rows = try await db.query(
                        """
                        INSERT INTO events (id, app_id, template, push_type, priority, collapse_id, payload, created_at, expires_at, dedupe_key, fcm_data, request_id)
                        SELECT i, a, t, p, r, NULLIF(c, ''), b, \(ms), e, NULLIF(d, ''), NULLIF(f, ''), NULLIF(q, '')
                        FROM unnest(\(ids)::TEXT[], \(events.map(\.app))::TEXT[], \(events.map(\.template))::TEXT[],
                                    \(events.map(\.push.pushType.rawValue))::TEXT[], \(events.map { Int64($0.push.priority.rawValue) })::BIGINT[],
                                    \(events.map { $0.push.collapseID ?? "" })::TEXT[], \(events.map { ByteBuffer(bytes: $0.push.payload) })::BYTEA[],
                                    \(events.map { $0.expiresAt.milliseconds })::BIGINT[], \(events.map { $0.dedupeKey ?? "" })::TEXT[],
                                    \(events.map { $0.push.fcmDataJSON ?? "" })::TEXT[], \(events.map { $0.requestID ?? "" })::TEXT[])
                             AS u(i, a, t, p, r, c, b, e, d, f, q)
                        ON CONFLICT (dedupe_key) DO NOTHING
                        RETURNING id
                        """, logger: logger)
                    var inserted = Set<String>()
                    for try await id in rows.decode(String.self) { inserted.insert(id) }
                    var eventIDs: [String] = [], deviceRows: [Int64] = [], apnsIDs: [String] = [], appIDs: [String] = [], expires: [Int64] = []
                    for event in events where inserted.contains(event.id) {
                        let rows = Array(Set(event.deviceRowIDs)).sorted()
                        let sequence = DeliveryIDSequence()
                        for row in rows {
                            eventIDs.append(event.id)
                            deviceRows.append(row)
                            apnsIDs.append(sequence.id(for: row))
                            appIDs.append(event.app)
                            expires.append(event.expiresAt.milliseconds)
                        }
                        created[event.id] = rows.count
                    }
                    if !eventIDs.isEmpty {
                        try await db.query(
                            """
                            INSERT INTO deliveries (event_id, device_row, app_id, state, attempts, next_attempt_at, apns_id, expires_at, created_at, updated_at, platform)
                            SELECT v, r, a, 'pending', 0, \(ms), n, e, \(ms), \(ms), d.platform
                            FROM unnest(\(eventIDs)::TEXT[], \(deviceRows)::BIGINT[], \(appIDs)::TEXT[], \(apnsIDs)::TEXT[], \(expires)::BIGINT[])
                                 AS t(v, r, a, n, e) LEFT JOIN devices d ON d.id = t.r  -- a missing device fails the NOT NULL
                            """, logger: logger)
                    }
                }
                if let checkpoint {
                    try await db.query(
                        """
                        INSERT INTO chain_checkpoints (source, block_hash, daa_score, updated_at)
                        VALUES (\(checkpoint.source), \(checkpoint.blockHash), \(Int64(bitPattern: checkpoint.daaScore)), \(ms))
                        ON CONFLICT (source) DO UPDATE SET block_hash = excluded.block_hash,
                          daa_score = excluded.daa_score, updated_at = excluded.updated_at
                        """, logger: logger)
                }
                return created
            }
        }
    }

    public func checkpoint(source: String) async throws -> ChainCheckpoint? {
        let rows = try await client.query(
            "SELECT source, block_hash, daa_score FROM chain_checkpoints WHERE source = \(source)", logger: logger)
        for try await (source, hash, score) in rows.decode((String, String, Int64).self) {
            return ChainCheckpoint(source: source, blockHash: hash, daaScore: UInt64(bitPattern: score))
        }
        return nil
    }

    public func anchors(source: String) async throws -> [ChainAnchor] {
        let rows = try await client.query(
            "SELECT block_hash, daa_score, block_time FROM chain_anchors WHERE source = \(source) ORDER BY block_time DESC", logger: logger)
        var anchors: [ChainAnchor] = []
        for try await (hash, score, time) in rows.decode((String, Int64, Int64).self) {
            anchors.append(ChainAnchor(source: source, blockHash: hash, daaScore: UInt64(bitPattern: score), time: Date(milliseconds: time)))
        }
        return anchors
    }

    public func addAnchor(_ anchor: ChainAnchor, keepingAfter: Date) async throws {
        try await client.withTransaction(logger: logger) { db in
            try await db.query(
                """
                INSERT INTO chain_anchors (source, block_hash, daa_score, block_time)
                VALUES (\(anchor.source), \(anchor.blockHash), \(Int64(bitPattern: anchor.daaScore)), \(anchor.time.milliseconds))
                ON CONFLICT DO NOTHING
                """, logger: logger)
            try await db.query(
                "DELETE FROM chain_anchors WHERE source = \(anchor.source) AND block_time < \(keepingAfter.milliseconds)", logger: logger)
        }
    }

    // MARK: Leadership

    public func withLeadership(_ name: String, poll: Duration, _ body: @escaping @Sendable () async -> Void) async throws {
        try await client.withConnection { connection in
            // A session lock on this connection: released by the server if this process dies.
            while true {
                try Task.checkCancellation()
                let rows = try await connection.query(
                    "SELECT pg_try_advisory_lock(\(Self.leadershipLock), hashtext(\(name)))", logger: logger)
                var held = false
                for try await acquired in rows.decode(Bool.self) { held = acquired }
                if held { break }
                try await Task.sleep(for: poll)
            }
            await body()
            _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.leadershipLock), hashtext(\(name)))", logger: logger)
        }
    }

    /// The first half of the advisory lock key for leaderships ("LEAD").
    static let leadershipLock: Int32 = 0x4C45_4144

    // MARK: Credentials

    public func credential(
        service: String, key: String, keep: @escaping @Sendable (LedgerCredential) -> Bool,
        make: @escaping @Sendable () async throws -> LedgerCredential
    ) async throws -> (credential: LedgerCredential, made: Bool) {
        try await client.withTransaction(logger: logger) { db in
            // The row may not exist yet: lock the key itself, held across `make`, so instances
            // decide one at a time and the others adopt what the first made.
            try await db.query("SELECT pg_advisory_xact_lock(\(Self.credentialLock), hashtext(\(service + ":" + key)))", logger: logger)
            let rows = try await db.query(
                "SELECT token, issued_at, expires_at FROM credentials WHERE service = \(service) AND key = \(key)", logger: logger)
            for try await (token, issuedAt, expiresAt) in rows.decode((String, Int64, Int64?).self) {
                let stored = LedgerCredential(token: token, issuedAt: Date(milliseconds: issuedAt), expiresAt: expiresAt.map(Date.init(milliseconds:)))
                if keep(stored) { return (stored, false) }
            }
            let made = try await make()
            try await db.query(
                """
                INSERT INTO credentials (service, key, token, issued_at, expires_at)
                VALUES (\(service), \(key), \(made.token), \(made.issuedAt.milliseconds), \(made.expiresAt?.milliseconds))
                ON CONFLICT (service, key) DO UPDATE SET token = excluded.token, issued_at = excluded.issued_at, expires_at = excluded.expires_at
                """, logger: logger)
            return (made, true)
        }
    }

    /// The first half of the advisory lock key for credentials ("CRED").
    static let credentialLock: Int32 = 0x4352_4544

    // MARK: Outbox

    public func claimDue(app: String, platform: Platform, limit: Int, now: Date, lease: Duration) async throws -> [ClaimedDelivery] {
        return try await leased(waiting: Self.laneConnectionWait, answering: laneAnswerDeadline) { [self] client in
            let ms = now.milliseconds
            let leaseUntil = ms + Int64(lease.seconds * 1000)
            return try await client.withTransaction(logger: logger) { db in
                // Rows another instance is claiming are skipped, not waited for.
                let claimed = try await db.query(
                    """
                    WITH due AS (
                      SELECT id FROM deliveries
                      WHERE app_id = \(app) AND platform = \(platform.rawValue) AND ((state = 'pending' AND next_attempt_at <= \(ms)) OR (state = 'sending' AND lease_until <= \(ms)))
                      ORDER BY next_attempt_at, id
                      LIMIT \(Int64(limit))
                      FOR UPDATE SKIP LOCKED)
                    UPDATE deliveries dl SET state = 'sending', lease_until = \(leaseUntil), attempts = attempts + 1, updated_at = \(ms)
                    FROM due WHERE dl.id = due.id
                    RETURNING dl.id
                    """, logger: logger)
                var ids: [Int64] = []
                for try await id in claimed.decode(Int64.self) { ids.append(id) }
                guard !ids.isEmpty else { return [] }
                let rows = try await db.query(
                    """
                    SELECT dl.id, dl.event_id, dl.apns_id, dl.attempts, dl.expires_at, e.push_type, e.priority, e.collapse_id, e.payload, e.fcm_data,
                           dl.created_at, e.request_id, e.template,
                           \(unescaped: Self.deviceColumns.split(separator: ",").map { "d." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", "))
                    FROM deliveries dl JOIN events e ON e.id = dl.event_id JOIN devices d ON d.id = dl.device_row
                    WHERE dl.id = ANY(\(ids))
                    ORDER BY dl.next_attempt_at, dl.id
                    """, logger: logger)
                var out: [ClaimedDelivery] = []
                for try await row in rows {
                    let (id, eventID, apnsID, attempts, expiresAt, pushType, priority, collapseID, payload, fcmData, createdAt, requestID, template) =
                        try row.decode((Int64, String, String, Int64, Int64, String, Int64, String?, ByteBuffer, String?, Int64, String?, String).self)
                    let device = try Self.device(row, from: 13)
                    out.append(ClaimedDelivery(
                        id: id, eventID: eventID, device: device,
                        push: RenderedPush(
                            storedPushType: pushType, storedPriority: Int(priority),
                            collapseID: collapseID, payload: Array(payload.readableBytesView), fcmData: RenderedPush.fcmData(json: fcmData)),
                        apnsID: UUID(uuidString: apnsID) ?? UUID(), attempt: Int(attempts), expiresAt: Date(milliseconds: expiresAt),
                        acceptedAt: Date(milliseconds: createdAt), requestID: requestID, template: template))
                }
                return out
            }
        }
    }

    public func complete(_ outcomes: [DeliveryOutcome], now: Date) async throws {
        return try await leased(waiting: Self.laneConnectionWait, answering: laneAnswerDeadline) { [self] client in
            guard !outcomes.isEmpty else { return }
            let ms = now.milliseconds
            try await client.withTransaction(logger: logger) { db in
                func set(_ id: Int64, _ state: DeliveryState, _ reason: String?) async throws {
                    try await db.query(
                        "UPDATE deliveries SET state = \(state.rawValue), last_reason = \(reason), lease_until = NULL, updated_at = \(ms) WHERE id = \(id)",
                        logger: logger)
                }
                for outcome in outcomes {
                    switch outcome {
                    case .sent(let id):
                        try await set(id, .sent, nil)
                    case .retry(let id, let at, let reason):
                        try await db.query(
                            """
                            UPDATE deliveries SET state = 'pending', next_attempt_at = \(at.milliseconds), last_reason = \(reason),
                              lease_until = NULL, updated_at = \(ms) WHERE id = \(id)
                            """, logger: logger)
                    case .retryDevice(let id, let deviceRowID, let at, let reason):
                        try await db.query(
                            """
                            UPDATE deliveries SET state = 'pending', next_attempt_at = \(at.milliseconds), last_reason = \(reason),
                              lease_until = NULL, updated_at = \(ms) WHERE id = \(id)
                            """, logger: logger)
                        try await db.query(
                            """
                            UPDATE deliveries SET next_attempt_at = \(at.milliseconds), updated_at = \(ms)
                            WHERE device_row = \(deviceRowID) AND state = 'pending' AND next_attempt_at < \(at.milliseconds)
                            """, logger: logger)
                    case .failed(let id, let reason):
                        try await set(id, .failed, reason)
                    case .expired(let id):
                        try await set(id, .expired, "expired")
                    case .tokenDead(let id, let deviceRowID, let since, let reason):
                        try await set(id, .failed, reason)
                        // Remembered past the device's deletion, for requests that name their device themselves.
                        let deadAt = (since ?? now).milliseconds
                        try await db.query(
                            """
                            INSERT INTO dead_tokens (app_id, token, reason, dead_at) SELECT app_id, token, \(reason), \(deadAt) FROM devices
                            WHERE id = \(deviceRowID) AND (\(since == nil) OR updated_at <= \(deadAt))
                            ON CONFLICT (app_id, token) DO UPDATE SET reason = excluded.reason, dead_at = excluded.dead_at
                            """, logger: logger)
                        if let since {
                            // Compare-and-delete: a registration after APNs's timestamp keeps the device.
                            try await db.query(
                                "DELETE FROM devices WHERE id = \(deviceRowID) AND updated_at <= \(since.milliseconds)", logger: logger)
                        } else {
                            try await db.query("UPDATE devices SET disabled_reason = \(reason) WHERE id = \(deviceRowID)", logger: logger)
                            try await db.query(
                                """
                                UPDATE deliveries SET state = 'dropped', last_reason = \(reason), lease_until = NULL, updated_at = \(ms)
                                WHERE device_row = \(deviceRowID) AND state IN ('pending', 'sending') AND id <> \(id)
                                """, logger: logger)
                        }
                    }
                }
            }
        }
    }

    public func expire(now: Date) async throws -> Int {
        return try await leased(waiting: Self.laneConnectionWait, answering: laneAnswerDeadline) { [self] client in
            try await Self.count(client.query(
                """
                UPDATE deliveries SET state = 'expired', last_reason = 'expired', lease_until = NULL, updated_at = \(now.milliseconds)
                WHERE state = 'pending' AND expires_at <= \(now.milliseconds) RETURNING id
                """, logger: logger))
        }
    }

    // MARK: Operations

    public func deviceCount(app: String) async throws -> Int {
        return try await leased { [self] client in
            for try await (count) in try await client.query("SELECT COUNT(*) FROM devices WHERE app_id = \(app)", logger: logger).decode(Int64.self) {
                return Int(count)
            }
            return 0
        }
    }

    public func deleteStaleDevices(lastSeenBefore: Date) async throws -> Int {
        try await Self.count(client.query(
            "DELETE FROM devices WHERE last_seen < \(lastSeenBefore.milliseconds) RETURNING id", logger: logger))
    }

    /// The counters (totals plus the deltas not folded yet), and the oldest pending delivery off
    /// the lane index: no query here counts rows of the tables.
    public func stats() async throws -> StoreStats {
        return try await leased { [self] client in
            var counts = StoreStats.Counts()
            counts.devices = try await counterRows(Self.deviceCounters)
            counts.deliveries = try await counterRows(Self.deliveryCounters)
            return StoreStats(counts, queues: try await queues())
        }
    }

    /// A kind of counter: its totals, the deltas not folded into them yet, and its two key columns.
    struct Counters {
        var totals: String
        var deltas: String
        var keys: String
    }
    static let deviceCounters = Counters(totals: "device_counts", deltas: "device_count_deltas", keys: "app_id, platform")
    static let deliveryCounters = Counters(totals: "delivery_counts", deltas: "delivery_count_deltas", keys: "state, reason")

    /// Each key's total plus its deltas.
    private func counterRows(_ c: Counters) async throws -> [(String, String, Int)] {
        var rows: [(String, String, Int)] = []
        let sql = "SELECT \(c.keys), SUM(n)::BIGINT FROM (SELECT \(c.keys), n FROM \(c.totals) UNION ALL SELECT \(c.keys), n FROM \(c.deltas)) c GROUP BY 1, 2"
        for try await (a, b, n) in try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode((String, String, Int64).self) {
            rows.append((a, b, Int(n)))
        }
        return rows
    }

    /// Folds the counters' deltas into their totals, in one transaction: a delta is moved once
    /// (a concurrent fold waits on the rows this one deletes, then finds them gone). Totals at
    /// zero go (failure reasons are a push service's words, and a Web Push service is anyone's).
    public func compactCounters() async throws {
        try await client.withTransaction(logger: logger) { db in
            for c in [Self.deliveryCounters, Self.deviceCounters] {
                try await db.query(
                    PostgresQuery(unsafeSQL: """
                        WITH moved AS (DELETE FROM \(c.deltas) RETURNING \(c.keys), n)
                        INSERT INTO \(c.totals) (\(c.keys), n) SELECT \(c.keys), SUM(n) FROM moved GROUP BY 1, 2 ORDER BY 1, 2
                        ON CONFLICT (\(c.keys)) DO UPDATE SET n = \(c.totals).n + EXCLUDED.n
                        """), logger: logger)
                try await db.query(PostgresQuery(unsafeSQL: "DELETE FROM \(c.totals) WHERE n = 0"), logger: logger)
            }
        }
    }

    public func pruneDeadTokens(deadBefore: Date) async throws -> Int {
        try await Self.count(client.query(
            "DELETE FROM dead_tokens WHERE dead_at < \(deadBefore.milliseconds) RETURNING dead_at", logger: logger))
    }

    public func pruneFinished(createdBefore before: Date, after cursor: PruneCursor?, limit: Int) async throws -> PruneBatch {
        let start = cursor ?? PruneCursor(createdAt: .min, eventID: "")
        return try await client.withTransaction(logger: logger) { db in
            var candidates: [PruneCursor] = []
            for try await (createdAt, id) in try await db.query(
                """
                SELECT created_at, id FROM events WHERE created_at < \(before.milliseconds) AND (created_at, id) > (\(start.createdAt), \(start.eventID))
                ORDER BY created_at, id LIMIT \(Int64(pruneCandidates))
                """, logger: logger
            ).decode((Int64, String).self) {
                candidates.append(PruneCursor(createdAt: createdAt, eventID: id))
            }
            func exists(_ query: PostgresQuery) async throws -> Bool {
                for try await _ in try await db.query(query, logger: logger).decode(Int32.self) { return true }
                return false
            }
            var batch = PruneBatch(events: 0, deliveries: 0, next: cursor)
            var budget = max(1, limit)
            for here in candidates {
                let id = here.eventID
                if try await exists("SELECT 1 FROM deliveries WHERE event_id = \(id) AND state IN ('pending', 'sending') LIMIT 1") {
                    batch.next = here
                    continue
                }
                var deleted = 0
                for try await _ in try await db.query(
                    "DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE event_id = \(id) LIMIT \(Int64(budget))) RETURNING id",
                    logger: logger
                ).decode(Int64.self) { deleted += 1 }
                budget -= deleted
                batch.deliveries += deleted
                // Out of budget with deliveries left: the next batch starts at this event again.
                if budget <= 0, try await exists("SELECT 1 FROM deliveries WHERE event_id = \(id) LIMIT 1") {
                    // (From the start when this was the pass's first event: a nil cursor would end the pass.)
                    batch.next = batch.next ?? start
                    return batch
                }
                try await db.query("DELETE FROM events WHERE id = \(id)", logger: logger)
                batch.events += 1
                batch.next = here
                if budget <= 0 { return batch }
            }
            if candidates.count < pruneCandidates { batch.next = nil }
            return batch
        }
    }

    public func event(id: String) async throws -> EventStatus? {
        return try await leased { [self] client in
            var status: EventStatus?
            for try await (app, template, created, expires) in try await client.query(
                "SELECT app_id, template, created_at, expires_at FROM events WHERE id = \(id)", logger: logger
            ).decode((String, String, Int64, Int64).self) {
                status = EventStatus(id: id, app: app, template: template, createdAt: Date(milliseconds: created), expiresAt: Date(milliseconds: expires))
            }
            guard var status else { return nil }
            for try await (state, reason, n) in try await client.query(
                "SELECT state, last_reason, COUNT(*)::BIGINT FROM deliveries WHERE event_id = \(id) GROUP BY state, last_reason", logger: logger
            ).decode((String, String?, Int64).self) {
                status.add(state: state, reason: reason, count: Int(n))
            }
            return status
        }
    }

    public func ping() async throws {
        return try await leased { [self] client in
            for try await _ in try await client.query("SELECT 1", logger: logger).decode(Int32.self) {}
        }
    }

    public func queues() async throws -> [String: AppQueue] {
        return try await leased { [self] client in
            var queues: [String: AppQueue] = [:]
            for try await (app, n, oldest) in try await client.query(
                "SELECT app_id, COUNT(*), MIN(created_at) FROM deliveries WHERE state IN ('pending', 'sending') GROUP BY app_id", logger: logger
            ).decode((String, Int64, Int64?).self) {
                queues[app] = AppQueue(depth: Int(n), oldest: oldest.map(Date.init(milliseconds:)))
            }
            return queues
        }
    }

    // MARK: Rows

    static let deviceColumns =
        "id, app_id, platform, token, device_id, created_at, updated_at, last_seen, disabled_reason, attributes"

    private static func device(_ row: PostgresRow, from first: Int) throws -> DeviceRecord {
        let cells = Array(row)
        func cell<T: PostgresDecodable>(_ i: Int, _ type: T.Type) throws -> T { try cells[first + i].decode(T.self) }
        return StoreRows.device(
            rowID: try cell(0, Int64.self), app: try cell(1, String.self), platform: try cell(2, String.self),
            token: try cell(3, String.self), deviceID: try cell(4, String?.self),
            createdAt: try cell(5, Int64.self), updatedAt: try cell(6, Int64.self), lastSeen: try cell(7, Int64.self),
            disabledReason: try cell(8, String?.self), attributes: try cell(9, String.self))
    }

    private static func devices(_ rows: PostgresRowSequence) async throws -> [DeviceRecord] {
        var out: [DeviceRecord] = []
        for try await row in rows { out.append(try device(row, from: 0)) }
        return out
    }

    private static func count(_ rows: PostgresRowSequence) async throws -> Int {
        var n = 0
        for try await _ in rows { n += 1 }
        return n
    }

    private static func replaceWatchSet(_ db: PostgresConnection, deviceRowID: Int64, with set: WatchSet, logger: Logger) async throws {
        try await db.query("DELETE FROM watch_keys WHERE device_row = \(deviceRowID)", logger: logger)
        try await db.query("DELETE FROM contextual_routes WHERE device_row = \(deviceRowID)", logger: logger)
        let roles = set.watched.map { _ in "watch" } + set.own.map { _ in "own" }
        let keys = set.watched.map(\.description) + set.own.map(\.string)
        if !keys.isEmpty {
            try await db.query(
                "INSERT INTO watch_keys (device_row, role, key) SELECT \(deviceRowID), r, k FROM unnest(\(roles)::TEXT[], \(keys)::TEXT[]) AS t(r, k)",
                logger: logger)
        }
        let routes = set.routes.flatMap { peer, aliases in aliases.map { (peer.string, $0) } }
        if !routes.isEmpty {
            try await db.query(
                """
                INSERT INTO contextual_routes (device_row, peer, alias)
                SELECT \(deviceRowID), p, a FROM unnest(\(routes.map(\.0))::TEXT[], \(routes.map(\.1))::TEXT[]) AS t(p, a)
                """, logger: logger)
        }
    }
}

/// A PostgreSQL store that cannot be set up as asked.
public struct PostgresStoreError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// Whether a leased call got its connection.
private final class LeaseFlag: Sendable {
    let started = Atomic<Bool>(false)
}

/// A leased call with a deadline: the first of its answer, its deadline (while it has no
/// connection) and its cancellation settles it, once; the tasks still running are cancelled.
private final class LeaseRace<R: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<R, any Error>?
        var result: Result<R, any Error>?
        var settled = false
        var connection: PostgresConnection?
        var tasks: [Task<Void, Never>] = []
    }
    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<R, any Error>) {
        let early: Result<R, any Error>? = state.withLock { s in
            if let result = s.result { return result }
            s.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func add(_ task: Task<Void, Never>) {
        let settled = state.withLock { s in
            if !s.settled { s.tasks.append(task) }
            return s.settled
        }
        if settled { task.cancel() }
    }

    /// The connection came: true when the call still waits for it (then the connection
    /// deadline no longer applies).
    func connected(_ connection: PostgresConnection) -> Bool {
        state.withLock { s in
            guard !s.settled else { return false }
            s.connection = connection
            return true
        }
    }

    var isConnected: Bool { state.withLock { $0.connection != nil } }

    /// The caller was cancelled: without a connection the call ends now; with one, its body is
    /// told and may end the call itself (what it wrote is not left half-known), within `grace`.
    func cancel(grace: Duration) {
        settle(.failure(CancellationError()), unlessConnected: true)
        for task in state.withLock({ $0.tasks }) { task.cancel() }
        guard isConnected else { return }
        Task {
            try? await Task.sleep(for: grace)
            await self.abandon(CancellationError())
        }
    }

    /// Ends a call still unsettled with `error` and closes its connection, so a query the
    /// database never answers neither holds the caller nor keeps the connection.
    func abandon(_ error: any Error) async {
        let connection = state.withLock { s in s.settled ? nil : s.connection }
        guard let connection else { return }
        settle(.failure(error))
        try? await connection.close()
    }

    func giveUpUnlessConnected(_ error: any Error) {
        guard !isConnected else { return }
        settle(.failure(error), unlessConnected: true)
    }

    func settle(_ result: Result<R, any Error>, unlessConnected: Bool = false) {
        let (continuation, tasks): (CheckedContinuation<R, any Error>?, [Task<Void, Never>]) = state.withLock { s in
            guard !s.settled, !(unlessConnected && s.connection != nil) else { return (nil, []) }
            s.settled = true
            s.result = result
            defer { (s.continuation, s.tasks) = (nil, []) }
            return (s.continuation, s.tasks)
        }
        continuation?.resume(with: result)
        for task in tasks { task.cancel() }
    }
}

/// When the database last answered a call through the pool.
final class DatabaseProgress: Sendable {
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    func answered() { last.withLock { $0 = .now } }

    /// Whether a call had its answer within the last `interval`.
    func answered(within interval: Duration) -> Bool {
        last.withLock { $0.map { ContinuousClock.now - $0 < interval } ?? false }
    }
}
