import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#endif
import HeraldAPNsCore
import HeraldCore
import HeraldPushCore
import KasiaProtocol

/// The `Store` on one SQLite file in WAL mode. Its SQL is the kind PostgreSQL also runs, so
/// the PostgreSQL store can share the statements.
public final class SQLiteStore: Store {
    private let pool: DatabasePool
    /// The publish and notify paths' reads, outside GRDB's pool.
    private let readers: SQLiteReaders
    /// Enqueues, the lanes' claims and their outcomes, committed together: one WAL sync for
    /// whatever arrived meanwhile.
    private let writes: GroupCommit<GroupedWrite, GroupedResult>
    /// Every lane's prefix of `deliveries_lane_due` (app, platform), so a query by state alone
    /// seeks each lane's deliveries in that state instead of scanning the table: SQLite has no
    /// index by state alone (`v11-sqlite` dropped it).
    private let everyLane: String

    /// Opens (creating if needed) the database at `path`. Call `migrate()` before use.
    /// - Parameter platforms: the push services whose lanes the expiry sweep and `queues()` cover.
    public init(path: String, platforms: [Platform] = Platform.builtIn) throws {
        // The database holds every device token: readable by its owner only. SQLite gives its WAL
        // and shared-memory files the database file's mode, so creating it 0600 covers all three.
        if !path.isEmpty, path != ":memory:", !path.hasPrefix("file:") {
            let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 { Glibc.close(fd) }
        }
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(10)
        let pool = try DatabasePool(path: path, configuration: configuration)
        self.pool = pool
        let names = platforms.map { "'" + $0.rawValue.replacingOccurrences(of: "'", with: "''") + "'" }
        everyLane = "app_id IN (SELECT id FROM apps) AND platform IN (\(names.joined(separator: ", ")))"
        readers = SQLiteReaders(path: path)
        writes = GroupCommit { group in await Self.commit(group, pool: pool) }
        // GRDB sets NORMAL with WAL, which survives a crashed process but may lose the last commits
        // on power loss. An accepted event must be on disk before its 2xx: sync the WAL at each commit.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
    }

    /// A read on the calling thread, outside a transaction (`DispatchQueue.sync` runs the block
    /// on the caller, and a WAL read never waits for the writer). Each statement sees a committed
    /// state. The hot paths' reads go to `readers` instead.
    private func readHere<T>(_ body: (Database) throws -> T) throws -> T { try pool.unsafeRead(body) }

    /// The writer's `PRAGMA synchronous` (2 = FULL).
    public func synchronousMode() async throws -> Int {
        try await pool.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    public func migrate() async throws {
        try await migrate(upTo: nil)
    }

    /// The schema up to and including `version` (nil: every version): a database as an older
    /// Herald left it, for the migration tests.
    package func migrate(upTo version: String?) async throws {
        var migrator = DatabaseMigrator()
        for (version, sql) in Schema.versions {
            migrator.registerMigration(version) { db in try db.execute(sql: sql) }
        }
        migrator.registerMigration(Schema.countersVersion) { db in try db.execute(sql: Schema.sqliteCounters) }
        for (version, sql) in Schema.laterVersions + Schema.sqliteLaterVersions + Schema.routeVersions {
            migrator.registerMigration(version) { db in try db.execute(sql: sql) }
        }
        if let version { try migrator.migrate(pool, upTo: version) } else { try migrator.migrate(pool) }
    }

    // MARK: Registrations

    public func register(_ registrations: [Registration], now: Date) async throws -> [DeviceRecord] {
        try await pool.write { db in
            let ms = now.milliseconds
            let app = try db.cachedStatement(sql: "INSERT INTO apps (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING")
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO devices (app_id, platform, token, attributes, device_id, created_at, updated_at, last_seen)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (app_id, token) DO UPDATE SET platform = excluded.platform, attributes = excluded.attributes,
                      device_id = excluded.device_id,
                      updated_at = excluded.updated_at, last_seen = excluded.last_seen, disabled_reason = NULL, registered_by = NULL
                    """)
            // A token registered again is alive, whatever a push service said of it before.
            let revive = try db.cachedStatement(sql: "DELETE FROM dead_tokens WHERE app_id = ? AND token = ?")
            var apps = Set<String>()
            return try registrations.map { r in
                if apps.insert(r.app).inserted { try app.execute(arguments: [r.app, ms]) }
                try revive.execute(arguments: [r.app, r.token.value])
                try upsert.execute(arguments: [
                    r.app, r.token.platform.rawValue, r.token.value,
                    r.storedAttributes.storedForm, r.deviceID, ms, ms, ms,
                ])
                let device = try Self.device(db, app: r.app, token: r.token.value)!
                try Self.replaceWatchSet(db, deviceRowID: device.rowID, with: r.watchSet)
                if r.replacesDeviceTokens, let deviceID = r.deviceID {
                    try db.execute(
                        sql: "DELETE FROM devices WHERE app_id = ? AND device_id = ? AND id <> ?",
                        arguments: [r.app, deviceID, device.rowID])
                }
                return device
            }
        }
    }

    /// When a push service called a token dead, if it did.
    private static let deadAtSQL = "SELECT dead_at FROM dead_tokens WHERE app_id = ? AND token = ?"
    /// One row: the device's columns (NULL when there is none; `registered_by` then `attributes` last), then `dead_at`.
    private static let admitSQL = """
        SELECT d.*, (\(deadAtSQL)) FROM (SELECT 1) LEFT JOIN devices d ON d.app_id = ? AND d.token = ?
        """
    /// `registered_by` of a Matrix notify's devices.
    static let matrixRoute = "matrix"

    public func admit(_ devices: [NamedDevice], now: Date) async throws -> [DeviceRecord?] {
        // Most notifies name a device already current: a read decides them, without a WAL sync.
        let settled = try readers.read { db in
            try devices.map { d -> DeviceRecord?? in
                // The device and when its token died, in one statement: one read transaction.
                let found = try db.rows(Self.admitSQL, [d.app, d.token.value, d.app, d.token.value]) { row in
                    (device: row.isNull(0) ? nil : Self.deviceRecord(row), byMatrix: row.optionalText(9) == Self.matrixRoute,
                     deadAt: row.optionalInteger(11))
                }.first
                return d.admittedWithoutWrite(
                    found?.device, deadAt: found?.deadAt, now: now, ownedElsewhere: found?.device != nil && found?.byMatrix == false)
            }
        }
        if settled.allSatisfy({ $0 != nil }) { return settled.map { $0! } }
        return try await pool.write { db in
            let ms = now.milliseconds
            let app = try db.cachedStatement(sql: "INSERT INTO apps (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING")
            let dead = try db.cachedStatement(sql: Self.deadAtSQL)
            let revive = try db.cachedStatement(sql: "DELETE FROM dead_tokens WHERE app_id = ? AND token = ?")
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO devices (app_id, platform, token, attributes, device_id, created_at, updated_at, last_seen, registered_by)
                    VALUES (?, ?, ?, ?, NULL, ?, ?, ?, 'matrix')
                    ON CONFLICT (app_id, token) DO UPDATE SET platform = excluded.platform, attributes = excluded.attributes,
                      updated_at = MAX(devices.updated_at, excluded.updated_at), last_seen = excluded.last_seen,
                      disabled_reason = CASE WHEN ? THEN NULL ELSE devices.disabled_reason END
                    WHERE devices.registered_by = 'matrix'
                    """)
            var apps = Set<String>()
            return try devices.map { d in
                let registered = d.registeredAt.milliseconds
                var revived = false
                if let deadAt = try Int64.fetchOne(dead, arguments: [d.app, d.token.value]) {
                    guard registered > deadAt else { return nil }
                    try revive.execute(arguments: [d.app, d.token.value])
                    revived = true
                }
                if apps.insert(d.app).inserted { try app.execute(arguments: [d.app, ms]) }
                try upsert.execute(arguments: [
                    d.app, d.token.platform.rawValue, d.token.value,
                    d.storedAttributes.storedForm, ms, registered, ms, revived,
                ])
                // No row written: the device is another route's, and stays as it is.
                let elsewhere = db.changesCount == 0
                guard var device = try Self.device(db, app: d.app, token: d.token.value), device.disabledReason == nil else { return nil }
                device.registeredElsewhere = elsewhere
                return device
            }
        }
    }

    public func updateWatchSet(app: String, token: String, watchSet: WatchSet, now: Date) async throws -> Bool {
        try await pool.write { db in
            guard let device = try Self.device(db, app: app, token: token) else { return false }
            try db.execute(
                sql: "UPDATE devices SET updated_at = ?, last_seen = ? WHERE id = ?",
                arguments: [now.milliseconds, now.milliseconds, device.rowID])
            try Self.replaceWatchSet(db, deviceRowID: device.rowID, with: watchSet)
            return true
        }
    }

    public func unregister(app: String, deviceID: String) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM devices WHERE app_id = ? AND device_id = ?", arguments: [app, deviceID])
            return db.changesCount
        }
    }

    public func unregister(app: String, token: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM devices WHERE app_id = ? AND token = ?", arguments: [app, token])
            return db.changesCount > 0
        }
    }

    public func status(app: String, token: String, now: Date) async throws -> (DeviceRecord, WatchSet)? {
        try await pool.write { db in
            try db.execute(
                sql: "UPDATE devices SET last_seen = ? WHERE app_id = ? AND token = ?",
                arguments: [now.milliseconds, app, token])
            guard let device = try Self.device(db, app: app, token: token) else { return nil }
            return (device, try Self.watchSets(db, for: [device.rowID])[device.rowID] ?? .empty)
        }
    }

    public func devices(app: String, watching key: String) async throws -> [DeviceRecord] {
        try readers.read { db in try Self.devices(db, app: app, watching: key) }
    }

    /// Every key on one reader: one checkout for a whole batch.
    public func devices(app: String, watchingEach keys: [String]) async throws -> [String: [DeviceRecord]] {
        guard !keys.isEmpty else { return [:] }
        return try readers.read { db in
            var found: [String: [DeviceRecord]] = [:]
            for key in Set(keys) { found[key] = try Self.devices(db, app: app, watching: key) }
            return found
        }
    }

    private static func devices(_ db: SQLiteReadConnection, app: String, watching key: String) throws -> [DeviceRecord] {
        try db.rows(
            """
            SELECT d.* FROM devices d WHERE d.app_id = ? AND d.disabled_reason IS NULL AND d.id IN (
              SELECT device_row FROM watch_keys WHERE key = ?
              UNION SELECT device_row FROM contextual_routes WHERE peer = ?)
            ORDER BY d.id
            """,
            [app, key, key], Self.deviceRecord)
    }

    public func watchSets(rowIDs: [Int64]) async throws -> [Int64: WatchSet] {
        try readHere { db in try Self.watchSets(db, for: rowIDs) }
    }

    public func devices(app: String, tokens: [String]) async throws -> [DeviceRecord] {
        try await devices(app: app, column: "token", in: tokens)
    }

    public func devices(app: String) async throws -> [DeviceRecord] {
        try readers.read { db in
            try db.rows("SELECT * FROM devices WHERE app_id = ? AND disabled_reason IS NULL ORDER BY id", [app], Self.deviceRecord)
        }
    }

    public func devices(app: String, deviceIDs: [String]) async throws -> [DeviceRecord] {
        try await devices(app: app, column: "device_id", in: deviceIDs)
    }

    private func devices(app: String, column: String, in values: [String]) async throws -> [DeviceRecord] {
        guard !values.isEmpty else { return [] }
        if values.count == 1 {
            // One token or id, the common publish: an index lookup, without `json_each`'s
            // temporary table and the sort.
            return try readers.read { db in
                try db.rows(
                    "SELECT * FROM devices WHERE app_id = ? AND disabled_reason IS NULL AND \(column) = ? ORDER BY id", [app, values[0]],
                    Self.deviceRecord)
            }
        }
        // The values as one JSON array, so one cached statement serves any number of them (each
        // is still an index lookup); SQL with a `?` per value was compiled for every request.
        let list = String(decoding: JSONValue.array(values.map(JSONValue.string)).encoded, as: UTF8.self)
        return try readers.read { db in
            try db.rows(
                "SELECT * FROM devices WHERE app_id = ? AND disabled_reason IS NULL AND \(column) IN (SELECT value FROM json_each(?)) ORDER BY id",
                [app, list], Self.deviceRecord)
        }
    }

    // MARK: Events

    public func enqueue(_ events: [NewEvent], checkpoint: ChainCheckpoint?, now: Date, claim: DirectClaim?) async throws -> EnqueueResult {
        guard case .enqueued(let result) = try await writes.submit(.enqueue(Enqueue(events: events, checkpoint: checkpoint, now: now, claim: claim)))
        else { preconditionFailure("an enqueue commits as an enqueue") }
        return result
    }

    /// A write the group commit takes: a publisher's events, a lane's claim or its outcomes.
    enum GroupedWrite: Sendable {
        case enqueue(Enqueue)
        case claim(app: String, platform: Platform, limit: Int, now: Date, lease: Duration)
        case complete([DeliveryOutcome], now: Date)
    }

    enum GroupedResult: Sendable {
        case enqueued(EnqueueResult)
        case claimed([ClaimedDelivery])
        case recorded
    }

    /// One caller's `enqueue`.
    struct Enqueue: Sendable {
        var events: [NewEvent]
        var checkpoint: ChainCheckpoint?
        var now: Date
        var claim: DirectClaim?
    }

    /// Commits the writes waiting together in one transaction: one WAL sync for all of them.
    /// If that transaction fails, each is retried alone, so one caller's bad batch fails only it.
    private static func commit(_ group: [GroupedWrite], pool: DatabasePool) async -> [Result<GroupedResult, any Error>] {
        if group.count > 1, let all = try? writeHere(pool, { db in try group.map { try Self.apply($0, db) } }) {
            return all.map { .success($0) }
        }
        var results: [Result<GroupedResult, any Error>] = []
        for write in group {
            do {
                results.append(.success(try writeHere(pool) { db in try Self.apply(write, db) }))
            } catch {
                results.append(.failure(error))
            }
        }
        return results
    }

    /// The group commit's transaction on the committing task's own thread (`DispatchQueue.sync`
    /// runs there): the async `pool.write` would wake the writer's thread and then this task's,
    /// two hand-overs per commit, which at one event a commit cost more than the insert. Group
    /// commit keeps to one committer at a time, so this holds one thread during the WAL sync.
    /// `BEGIN IMMEDIATE` and `COMMIT` are statements prepared once: GRDB's `write` compiles both
    /// for every transaction (a tenth of the commit's own CPU at one event a commit).
    private static func writeHere<T>(_ pool: DatabasePool, _ body: (Database) throws -> T) throws -> T {
        try pool.writeWithoutTransaction { db in
            try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
            do {
                let result = try body(db)
                try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
                return result
            } catch {
                if db.isInsideTransaction { try? db.execute(sql: "ROLLBACK TRANSACTION") }
                throw error
            }
        }
    }

    private static func apply(_ write: GroupedWrite, _ db: Database) throws -> GroupedResult {
        switch write {
        case .enqueue(let request):
            return .enqueued(try insert(request, db))
        case .claim(let app, let platform, let limit, let now, let lease):
            return .claimed(try claim(app: app, platform: platform, limit: limit, now: now, lease: lease, db))
        case .complete(let outcomes, let now):
            try record(outcomes, now: now, db)
            return .recorded
        }
    }

    private static func insert(_ request: Enqueue, _ db: Database) throws -> EnqueueResult {
        let (events, checkpoint, now) = (request.events, request.checkpoint, request.now)
        var created: [String: Int] = [:]
        var claimed: [ClaimedDelivery] = []
        var pending = Set<LaneKey>()
        var budget = request.claim?.lanes ?? [:]
        let ms = now.milliseconds
        let leaseUntil = ms + Int64((request.claim?.lease ?? .zero).seconds * 1000)
        let insertDelivery = try db.cachedStatement(
            sql: """
                INSERT INTO deliveries (event_id, device_row, app_id, state, attempts, next_attempt_at, lease_until, apns_id, expires_at, created_at, updated_at, platform)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        let deviceByRow = try db.cachedStatement(sql: "SELECT * FROM devices WHERE id = ?")
        // Each app once per transaction, not once per event.
        let addApp = try db.cachedStatement(sql: "INSERT INTO apps (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING")
        for app in Set(events.map(\.app)) { try addApp.execute(arguments: [app, ms]) }
        // A repeated dedupe key inserts nothing, and its event is skipped: one index lookup, not a
        // read and then an insert.
        let insertEvent = try db.cachedStatement(
            sql: """
                INSERT INTO events (id, app_id, template, push_type, priority, collapse_id, payload, created_at, expires_at, dedupe_key, fcm_data, request_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING
                """)
        // The two inserts run once per event and per delivery: their values are bound directly.
        // An empty argument list tells GRDB the parameters are bound, and it executes as usual.
        insertEvent.setUncheckedArguments([])
        insertDelivery.setUncheckedArguments([])
        let eventValues = SQLiteParameters(insertEvent.sqliteStatement)
        let deliveryValues = SQLiteParameters(insertDelivery.sqliteStatement)
        func addDelivery(
            _ event: NewEvent, row: Int64, state: DeliveryState, attempts: Int64, leaseUntil: Int64?, apnsID: String,
            expiresAt: Int64, platform: String?
        ) throws {
            deliveryValues.reset()
            try deliveryValues.text(1, event.id)
            try deliveryValues.integer(2, row)
            try deliveryValues.text(3, event.app)
            try deliveryValues.text(4, state.rawValue)
            try deliveryValues.integer(5, attempts)
            try deliveryValues.integer(6, ms)
            try deliveryValues.integer(7, leaseUntil)
            try deliveryValues.text(8, apnsID)
            try deliveryValues.integer(9, expiresAt)
            try deliveryValues.integer(10, ms)
            try deliveryValues.integer(11, ms)
            try deliveryValues.text(12, platform)
            try insertDelivery.execute()
        }
        for event in events {
            eventValues.reset()
            try eventValues.text(1, event.id)
            try eventValues.text(2, event.app)
            try eventValues.text(3, event.template)
            try eventValues.text(4, event.push.pushType.rawValue)
            try eventValues.integer(5, Int64(event.push.priority.rawValue))
            try eventValues.text(6, event.push.collapseID)
            try eventValues.blob(7, event.push.payload)
            try eventValues.integer(8, ms)
            try eventValues.integer(9, event.expiresAt.milliseconds)
            try eventValues.text(10, event.dedupeKey)
            try eventValues.text(11, event.push.fcmDataJSON)
            try eventValues.text(12, event.requestID)
            try insertEvent.execute()
            guard db.changesCount == 1 else { continue }
            let apnsIDs = DeliveryIDSequence()
            let expiresAt = event.expiresAt.milliseconds
            let rows = Set(event.deviceRowIDs).sorted()
            let routed = event.devices.count == rows.count ? event.devices : []
            for (i, row) in rows.enumerated() {
                // A device gone since routing: its insert fails on the foreign key, as it should.
                let device = i < routed.count && routed[i].rowID == row
                    ? routed[i] : try Row.fetchOne(deviceByRow, arguments: [row]).map(Self.deviceRecord)
                let lane = device.map { LaneKey(app: event.app, platform: $0.platform) }
                let apnsID = apnsIDs.uuid(for: row)
                if let device, let lane, let left = budget[lane], left > 0 {
                    budget[lane] = left - 1
                    try addDelivery(
                        event, row: row, state: .sending, attempts: 1, leaseUntil: leaseUntil, apnsID: apnsID.lowercased,
                        expiresAt: expiresAt, platform: lane.platform.rawValue)
                    claimed.append(ClaimedDelivery(
                        id: db.lastInsertedRowID, eventID: event.id, device: device, push: event.push, apnsID: apnsID.uuid, attempt: 1,
                        expiresAt: Date(milliseconds: expiresAt), acceptedAt: Date(milliseconds: ms), requestID: event.requestID))
                } else {
                    try addDelivery(
                        event, row: row, state: .pending, attempts: 0, leaseUntil: nil, apnsID: apnsID.lowercased,
                        expiresAt: expiresAt, platform: lane?.platform.rawValue)
                    if let lane { pending.insert(lane) }
                }
            }
            created[event.id] = rows.count
        }
        var counts = DeliveryCounts()
        counts.add(.sending, nil, claimed.count)
        counts.add(.pending, nil, created.values.reduce(0, +) - claimed.count)
        try counts.apply(db)
        if let checkpoint {
            try db.execute(
                sql: """
                    INSERT INTO chain_checkpoints (source, block_hash, daa_score, updated_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (source) DO UPDATE SET block_hash = excluded.block_hash,
                      daa_score = excluded.daa_score, updated_at = excluded.updated_at
                    """,
                arguments: [checkpoint.source, checkpoint.blockHash, Int64(bitPattern: checkpoint.daaScore), ms])
        }
        return EnqueueResult(created: created, claimed: claimed, pending: pending)
    }

    public func checkpoint(source: String) async throws -> ChainCheckpoint? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM chain_checkpoints WHERE source = ?", arguments: [source]).map {
                ChainCheckpoint(source: $0["source"], blockHash: $0["block_hash"], daaScore: UInt64(bitPattern: $0["daa_score"]))
            }
        }
    }

    public func anchors(source: String) async throws -> [ChainAnchor] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT block_hash, daa_score, block_time FROM chain_anchors WHERE source = ? ORDER BY block_time DESC",
                arguments: [source]
            ).map {
                ChainAnchor(source: source, blockHash: $0[0], daaScore: UInt64(bitPattern: $0[1]), time: Date(milliseconds: $0[2]))
            }
        }
    }

    public func addAnchor(_ anchor: ChainAnchor, keepingAfter: Date) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO chain_anchors (source, block_hash, daa_score, block_time) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [anchor.source, anchor.blockHash, Int64(bitPattern: anchor.daaScore), anchor.time.milliseconds])
            try db.execute(
                sql: "DELETE FROM chain_anchors WHERE source = ? AND block_time < ?", arguments: [anchor.source, keepingAfter.milliseconds])
        }
    }

    // MARK: Leadership

    public func withLeadership(_ name: String, poll: Duration, _ body: @escaping @Sendable () async -> Void) async throws {
        await body()
    }

    // MARK: Credentials

    public func credential(
        service: String, key: String, keep: @escaping @Sendable (LedgerCredential) -> Bool,
        make: @escaping @Sendable () async throws -> LedgerCredential
    ) async throws -> (credential: LedgerCredential, made: Bool) {
        @Sendable func stored(_ db: Database) throws -> LedgerCredential? {
            try Row.fetchOne(db, sql: "SELECT token, issued_at, expires_at FROM credentials WHERE service = ? AND key = ?", arguments: [service, key])
                .map { LedgerCredential(token: $0["token"], issuedAt: Date(milliseconds: $0["issued_at"]), expiresAt: ($0["expires_at"] as Int64?).map(Date.init(milliseconds:))) }
        }
        let read = try await pool.read(stored)
        if let read, keep(read) { return (read, false) }
        // `make` may be a network exchange: it runs outside the write lock. Whoever writes first
        // wins; a store that made one meanwhile adopts the winner's, so the instances on a file
        // still send one credential.
        let made = try await make()
        return try await pool.write { db in
            let current = try stored(db)
            if let current, current != read, keep(current) { return (current, false) }
            try db.execute(
                sql: """
                    INSERT INTO credentials (service, key, token, issued_at, expires_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (service, key) DO UPDATE SET token = excluded.token, issued_at = excluded.issued_at, expires_at = excluded.expires_at
                    """, arguments: [service, key, made.token, made.issuedAt.milliseconds, made.expiresAt?.milliseconds])
            return (made, true)
        }
    }

    // MARK: Outbox

    /// A claim joins the group commit, beside the enqueues that made the work it claims.
    public func claimDue(app: String, platform: Platform, limit: Int, now: Date, lease: Duration) async throws -> [ClaimedDelivery] {
        guard case .claimed(let claimed) = try await writes.submit(.claim(app: app, platform: platform, limit: limit, now: now, lease: lease))
        else { preconditionFailure("a claim commits as a claim") }
        return claimed
    }

    private static func claim(app: String, platform: Platform, limit: Int, now: Date, lease: Duration, _ db: Database) throws -> [ClaimedDelivery] {
        let ms = now.milliseconds
        let arguments: StatementArguments = [app, platform.rawValue, ms, limit]
        // The due ones in one statement, read in (next_attempt_at, id) order straight off the
        // lane index; lapsed leases (rare) by a second scan. A UNION or an OR of the two would
        // build a temporary b-tree on every claim.
        var due = try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT \(Self.claimColumns)
                FROM (SELECT id FROM deliveries
                      WHERE app_id = ? AND platform = ? AND state = 'pending' AND next_attempt_at <= ?
                      ORDER BY next_attempt_at, id LIMIT ?) due
                JOIN deliveries dl ON dl.id = due.id
                JOIN events e ON e.id = dl.event_id
                JOIN devices d ON d.id = dl.device_row
                """), arguments: arguments)
        let lapsed = try Int64.fetchAll(
            db.cachedStatement(sql: """
                SELECT id FROM deliveries WHERE app_id = ? AND platform = ? AND state = 'sending' AND lease_until <= ? LIMIT ?
                """), arguments: arguments)
        if !lapsed.isEmpty {
            let read = try db.cachedStatement(sql: """
                SELECT \(Self.claimColumns)
                FROM deliveries dl JOIN events e ON e.id = dl.event_id JOIN devices d ON d.id = dl.device_row
                WHERE dl.id = ?
                """)
            due += try lapsed.compactMap { try Row.fetchOne(read, arguments: [$0]) }
        }
        due.sort { ($0[10] as Int64, $0[0] as Int64) < ($1[10] as Int64, $1[0] as Int64) }
        let leaseUntil = ms + Int64(lease.seconds * 1000)
        let claim = try db.cachedStatement(
            sql: "UPDATE deliveries SET state = 'sending', lease_until = ?, attempts = attempts + 1, updated_at = ? WHERE id = ?")
        // Those the first scan found were pending; a lapsed lease stays `sending`.
        let relapsed = Set(lapsed)
        var counts = DeliveryCounts()
        counts.move(from: (.pending, nil), to: (.sending, nil), count: due.prefix(limit).count(where: { !relapsed.contains($0[0]) }))
        try counts.apply(db)
        return try due.prefix(limit).map { row in
            let id: Int64 = row[0]
            try claim.execute(arguments: [leaseUntil, ms, id])
            let data: Data = row[8]
            return ClaimedDelivery(
                id: id, eventID: row[1], device: Self.deviceRecord(row, from: 14),
                push: RenderedPush(
                    storedPushType: row[5], storedPriority: row[6],
                    collapseID: row[7], payload: Array(data), fcmData: RenderedPush.fcmData(json: row[9])),
                apnsID: UUID(uuidString: row[2]) ?? UUID(),
                attempt: (row[3] as Int) + 1,
                expiresAt: Date(milliseconds: row[4]), acceptedAt: Date(milliseconds: row[11]), requestID: row[12], template: row[13])
        }
    }

    /// What a claim reads, by position: the delivery (0–4), its event's push (5–9),
    /// `next_attempt_at` (10, for the order), its creation (11), its event's request (12) and
    /// template (13), then the device's columns (from 14).
    private static let claimColumns = """
        dl.id, dl.event_id, dl.apns_id, dl.attempts, dl.expires_at,
        e.push_type, e.priority, e.collapse_id, e.payload, e.fcm_data, dl.next_attempt_at, dl.created_at, e.request_id, e.template, d.*
        """

    /// Outcomes join the group commit: with publishes arriving, they share their transaction and
    /// WAL sync instead of taking the writer for one of their own.
    public func complete(_ outcomes: [DeliveryOutcome], now: Date) async throws {
        guard !outcomes.isEmpty else { return }
        _ = try await writes.submit(.complete(outcomes, now: now))
    }

    private static func record(_ outcomes: [DeliveryOutcome], now: Date, _ db: Database) throws {
        let ms = now.milliseconds
        var counts = DeliveryCounts()
        for outcome in outcomes {
            switch outcome {
            case .sent(let id):
                try Self.setState(db, id, .sent, reason: nil, now: ms, counts: &counts)
            case .retry(let id, let at, let reason):
                try Self.retry(db, id, at: at, reason: reason, now: ms, counts: &counts)
            case .retryDevice(let id, let deviceRowID, let at, let reason):
                try Self.retry(db, id, at: at, reason: reason, now: ms, counts: &counts)
                try db.execute(
                    sql: "UPDATE deliveries SET next_attempt_at = ?, updated_at = ? WHERE device_row = ? AND state = 'pending' AND next_attempt_at < ?",
                    arguments: [at.milliseconds, ms, deviceRowID, at.milliseconds])
            case .failed(let id, let reason):
                try Self.setState(db, id, .failed, reason: reason, now: ms, counts: &counts)
            case .expired(let id):
                try Self.setState(db, id, .expired, reason: "expired", now: ms, counts: &counts)
            case .tokenDead(let id, let deviceRowID, let since, let reason):
                try Self.setState(db, id, .failed, reason: reason, now: ms, counts: &counts)
                // Remembered past the device's deletion, for requests that name their device themselves.
                try db.execute(
                    sql: """
                        INSERT INTO dead_tokens (app_id, token, reason, dead_at) SELECT app_id, token, ?, ? FROM devices
                        WHERE id = ? AND (? OR updated_at <= ?)
                        ON CONFLICT (app_id, token) DO UPDATE SET reason = excluded.reason, dead_at = excluded.dead_at
                        """,
                    arguments: [reason, (since ?? now).milliseconds, deviceRowID, since == nil, (since ?? now).milliseconds])
                if let since {
                    // Compare-and-delete: a registration after APNs's timestamp keeps the device.
                    try db.execute(
                        sql: "DELETE FROM devices WHERE id = ? AND updated_at <= ?",
                        arguments: [deviceRowID, since.milliseconds])
                } else {
                    try db.execute(
                        sql: "UPDATE devices SET disabled_reason = ? WHERE id = ?", arguments: [reason, deviceRowID])
                    for row in try Row.fetchAll(
                        db, sql: "SELECT state, COUNT(*) FROM deliveries WHERE device_row = ? AND state IN ('pending', 'sending') AND id <> ? GROUP BY state",
                        arguments: [deviceRowID, id])
                    {
                        guard let state = DeliveryState(rawValue: row[0]) else { continue }
                        counts.move(from: (state, nil), to: (.dropped, reason), count: row[1])
                    }
                    try db.execute(
                        sql: """
                            UPDATE deliveries SET state = 'dropped', last_reason = ?, lease_until = NULL, updated_at = ?
                            WHERE device_row = ? AND state IN ('pending', 'sending') AND id <> ?
                            """,
                        arguments: [reason, ms, deviceRowID, id])
                }
            }
        }
        try counts.apply(db)
    }

    public func expire(now: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE deliveries SET state = 'expired', last_reason = 'expired', lease_until = NULL, updated_at = ?
                    WHERE \(everyLane) AND state = 'pending' AND expires_at <= ?
                    """,
                arguments: [now.milliseconds, now.milliseconds])
            let expired = db.changesCount
            var counts = DeliveryCounts()
            counts.move(from: (.pending, nil), to: (.expired, nil), count: expired)
            try counts.apply(db)
            return expired
        }
    }

    // MARK: Operations

    public func deviceCount(app: String) async throws -> Int {
        try await pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM devices WHERE app_id = ?", arguments: [app]) ?? 0 }
    }

    public func deleteStaleDevices(lastSeenBefore: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM devices WHERE last_seen < ?", arguments: [lastSeenBefore.milliseconds])
            return db.changesCount
        }
    }

    /// The counters the triggers keep, and the oldest pending delivery off the lane index: no
    /// query here counts rows of the tables.
    public func stats() async throws -> StoreStats {
        let counts = try await pool.read { db in
            var counts = StoreStats.Counts()
            for row in try Row.fetchAll(db, sql: "SELECT app_id, platform, n FROM device_counts") {
                counts.devices.append((row[0], row[1], row[2]))
            }
            for row in try Row.fetchAll(db, sql: "SELECT state, reason, n FROM delivery_counts") {
                counts.deliveries.append((row[0], row[1], row[2]))
            }
            return counts
        }
        return StoreStats(counts, queues: try await queues())
    }

    public func event(id: String) async throws -> EventStatus? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT app_id, template, created_at, expires_at FROM events WHERE id = ?", arguments: [id]) else {
                return nil
            }
            var status = EventStatus(
                id: id, app: row[0], template: row[1], createdAt: Date(milliseconds: row[2]), expiresAt: Date(milliseconds: row[3]))
            for row in try Row.fetchAll(db, sql: "SELECT state, last_reason, COUNT(*) FROM deliveries WHERE event_id = ? GROUP BY state, last_reason", arguments: [id]) {
                status.add(state: row[0], reason: row[1], count: row[2])
            }
            return status
        }
    }

    /// Nothing to fold (the totals are written in place); drops counters at zero, since failure
    /// reasons are a push service's words and a Web Push service is anyone's.
    public func compactCounters() async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM delivery_counts WHERE n = 0 AND reason <> ''")
            try db.execute(sql: "DELETE FROM device_counts WHERE n = 0")
        }
    }

    public func pruneDeadTokens(deadBefore: Date) async throws -> Int {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM dead_tokens WHERE dead_at < ?", arguments: [deadBefore.milliseconds])
            return db.changesCount
        }
    }

    public func pruneFinished(createdBefore before: Date, after cursor: PruneCursor?, limit: Int) async throws -> PruneBatch {
        let batch = try await pruneBatch(createdBefore: before, after: cursor, limit: limit)
        // The pages a batch freed go back to the database file now, in the pruner's time: else the
        // commit that next crosses the WAL's checkpoint threshold (a publish) copies them.
        if batch.deliveries > 0 { try await pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)") } }
        return batch
    }

    private func pruneBatch(createdBefore before: Date, after cursor: PruneCursor?, limit: Int) async throws -> PruneBatch {
        try await pool.write { db in
            let start = cursor ?? PruneCursor(createdAt: .min, eventID: "")
            let candidates = try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT created_at, id FROM events WHERE created_at < ? AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?
                    """), arguments: [before.milliseconds, start.createdAt, start.eventID, pruneCandidates])
            let unfinished = try db.cachedStatement(
                sql: "SELECT 1 FROM deliveries WHERE event_id = ? AND state IN ('pending', 'sending') LIMIT 1")
            let deleteDeliveries = try db.cachedStatement(
                sql: "DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries WHERE event_id = ? LIMIT ?)")
            let anyLeft = try db.cachedStatement(sql: "SELECT 1 FROM deliveries WHERE event_id = ? LIMIT 1")
            let deleteEvent = try db.cachedStatement(sql: "DELETE FROM events WHERE id = ?")
            var batch = PruneBatch(events: 0, deliveries: 0, next: cursor)
            var budget = max(1, limit)
            for row in candidates {
                let here = PruneCursor(createdAt: row[0], eventID: row[1])
                if try Int.fetchOne(unfinished, arguments: [here.eventID]) != nil {
                    batch.next = here
                    continue
                }
                try deleteDeliveries.execute(arguments: [here.eventID, budget])
                budget -= db.changesCount
                batch.deliveries += db.changesCount
                // Out of budget with deliveries left: the next batch starts at this event again.
                if budget <= 0, try Int.fetchOne(anyLeft, arguments: [here.eventID]) != nil {
                    // (From the start when this was the pass's first event: a nil cursor would end the pass.)
                    batch.next = batch.next ?? start
                    return batch
                }
                try deleteEvent.execute(arguments: [here.eventID])
                batch.events += 1
                batch.next = here
                if budget <= 0 { return batch }
            }
            if candidates.count < pruneCandidates { batch.next = nil }
            return batch
        }
    }

    /// Closes the database: every later call throws (a store gone from under the API).
    public func close() throws {
        readers.close()
        try pool.close()
    }

    public func ping() async throws {
        _ = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    public func queues() async throws -> [String: AppQueue] {
        try await pool.read { db in
            var queues: [String: AppQueue] = [:]
            for row in try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT app_id, COUNT(*), MIN(created_at) FROM deliveries WHERE \(everyLane) AND state IN ('pending', 'sending')
                    GROUP BY app_id
                    """))
            {
                queues[row[0]] = AppQueue(depth: row[1], oldest: (row[2] as Int64?).map(Date.init(milliseconds:)))
            }
            return queues
        }
    }

    // MARK: Rows

    private static func device(_ db: Database, app: String, token: String) throws -> DeviceRecord? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT * FROM devices WHERE app_id = ? AND token = ?"), arguments: [app, token]
        ).map(deviceRecord)
    }

    /// A device from `SELECT devices.*` columns (table order) starting at `first`: read by position,
    /// since a name lookup per column costs more than the rest of the decoding when a fan-out
    /// reads 100,000 devices.
    private static func deviceRecord(_ row: Row, from first: Int) -> DeviceRecord {
        StoreRows.device(
            rowID: row[first], app: row[first + 1], platform: row[first + 2], token: row[first + 3], deviceID: row[first + 4],
            createdAt: row[first + 5], updatedAt: row[first + 6], lastSeen: row[first + 7], disabledReason: row[first + 8],
            attributes: row[first + 10])
    }

    private static func deviceRecord(_ row: Row) -> DeviceRecord { deviceRecord(row, from: 0) }

    /// The same from a reader's row (`SELECT devices.*`).
    private static func deviceRecord(_ row: SQLiteRow) -> DeviceRecord {
        StoreRows.device(
            rowID: row.integer(0), app: row.text(1), platform: row.text(2), token: row.text(3), deviceID: row.optionalText(4),
            createdAt: row.integer(5), updatedAt: row.integer(6), lastSeen: row.integer(7), disabledReason: row.optionalText(8),
            attributes: row.text(10))
    }

    private static func setState(
        _ db: Database, _ id: Int64, _ state: DeliveryState, reason: String?, now: Int64, counts: inout DeliveryCounts
    ) throws {
        let was = try counted(db, id)
        try db.cachedStatement(sql: "UPDATE deliveries SET state = ?, last_reason = ?, lease_until = NULL, updated_at = ? WHERE id = ?")
            .execute(arguments: [state.rawValue, reason, now, id])
        if let was { counts.move(from: was, to: (state, reason)) }
    }

    /// A retry: the delivery waits until `at`, its reason kept.
    private static func retry(_ db: Database, _ id: Int64, at: Date, reason: String, now: Int64, counts: inout DeliveryCounts) throws {
        let was = try counted(db, id)
        try db.cachedStatement(
            sql: "UPDATE deliveries SET state = 'pending', next_attempt_at = ?, last_reason = ?, lease_until = NULL, updated_at = ? WHERE id = ?"
        ).execute(arguments: [at.milliseconds, reason, now, id])
        if let was { counts.move(from: was, to: (.pending, reason)) }
    }

    /// A delivery's state and reason before an outcome changes them (nil: it is gone).
    private static func counted(_ db: Database, _ id: Int64) throws -> (DeliveryState, String?)? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT state, last_reason FROM deliveries WHERE id = ?"), arguments: [id])
            .flatMap { row in DeliveryState(rawValue: row[0]).map { ($0, row[1]) } }
    }

    private static func replaceWatchSet(_ db: Database, deviceRowID: Int64, with set: WatchSet) throws {
        try db.cachedStatement(sql: "DELETE FROM watch_keys WHERE device_row = ?").execute(arguments: [deviceRowID])
        try db.cachedStatement(sql: "DELETE FROM contextual_routes WHERE device_row = ?").execute(arguments: [deviceRowID])
        let key = try db.cachedStatement(sql: "INSERT INTO watch_keys (device_row, role, key) VALUES (?, ?, ?)")
        for watched in set.watched { try key.execute(arguments: [deviceRowID, "watch", watched.description]) }
        for own in set.own { try key.execute(arguments: [deviceRowID, "own", own.string]) }
        let route = try db.cachedStatement(sql: "INSERT INTO contextual_routes (device_row, peer, alias) VALUES (?, ?, ?)")
        for (peer, aliases) in set.routes {
            for alias in aliases { try route.execute(arguments: [deviceRowID, peer.string, alias]) }
        }
    }

    /// Watch sets of several devices at once. Stored keys were validated when registered.
    private static func watchSets(_ db: Database, for rowIDs: [Int64]) throws -> [Int64: WatchSet] {
        guard !rowIDs.isEmpty else { return [:] }
        var keys: [(Int64, String, String)] = []
        var routes: [(Int64, String, String)] = []
        for chunk in stride(from: 0, to: rowIDs.count, by: 500).map({ Array(rowIDs[$0..<min($0 + 500, rowIDs.count)]) }) {
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
            for row in try Row.fetchAll(
                db, sql: "SELECT device_row, role, key FROM watch_keys WHERE device_row IN (\(marks))",
                arguments: StatementArguments(chunk))
            {
                keys.append((row["device_row"], row["role"], row["key"]))
            }
            for row in try Row.fetchAll(
                db, sql: "SELECT device_row, peer, alias FROM contextual_routes WHERE device_row IN (\(marks))",
                arguments: StatementArguments(chunk))
            {
                routes.append((row["device_row"], row["peer"], row["alias"]))
            }
        }
        return StoreRows.watchSets(for: rowIDs, keys: keys, routes: routes)
    }
}

extension Date {
    /// Unix milliseconds, as stored (Apple's 410 timestamps are milliseconds too).
    var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }
}

/// The apns-ids of one event's deliveries: one random UUID per event whose last 48 bits are
/// replaced by each device's row id. As unique as a random UUID per delivery, without a
/// random draw and a formatted string per device (a fan-out to 100,000 devices).
struct DeliveryIDSequence {
    private let base: [UInt8]

    init() {
        let u = UUID.random().uuid
        base = [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9]
    }

    /// The lowercase 8-4-4-4-12 form APNs takes.
    func id(for deviceRow: Int64) -> String { uuid(for: deviceRow).lowercased }

    /// The id as a UUID and in its stored form.
    func uuid(for deviceRow: Int64) -> (uuid: UUID, lowercased: String) {
        var bytes = base
        for shift in stride(from: 40, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: deviceRow >> Int64(shift))) }
        let uuid = UUID(bytes: bytes)
        return (uuid, uuid.lowercasedString)
    }
}

/// The changes a write transaction makes to the delivery counters (`/v1/stats`), applied once
/// before it commits: SQLite's hot paths (enqueue, claim, outcomes, expiry) count here, one
/// update per key instead of a trigger per row. Deletes (a device's cascade, retention) keep triggers.
struct DeliveryCounts {
    private var deltas: [Key: Int] = [:]

    struct Key: Hashable {
        var state: String
        var reason: String
    }

    /// The counter key: the reason only for deliveries that ended in one (as `Schema.reasonKey`).
    static func key(_ state: DeliveryState, _ reason: String?) -> Key {
        Key(state: state.rawValue, reason: state == .failed || state == .dropped ? reason ?? "unknown" : "")
    }

    mutating func add(_ state: DeliveryState, _ reason: String?, _ n: Int) {
        guard n != 0 else { return }
        deltas[Self.key(state, reason), default: 0] += n
    }

    mutating func move(from: (DeliveryState, String?), to: (DeliveryState, String?), count: Int = 1) {
        add(from.0, from.1, -count)
        add(to.0, to.1, count)
    }

    /// One update a key (a new key's row inserted), then nothing left to apply.
    mutating func apply(_ db: Database) throws {
        for (key, n) in deltas where n != 0 {
            try db.cachedStatement(sql: "UPDATE delivery_counts SET n = n + ? WHERE state = ? AND reason = ?")
                .execute(arguments: [n, key.state, key.reason])
            if db.changesCount == 0 {
                try db.cachedStatement(sql: "INSERT INTO delivery_counts (state, reason, n) VALUES (?, ?, ?)")
                    .execute(arguments: [key.state, key.reason, n])
            }
        }
        deltas = [:]
    }
}
