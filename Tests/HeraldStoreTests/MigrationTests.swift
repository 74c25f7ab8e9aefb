import Foundation
import GRDB
import HeraldAPNsCore
import HeraldCore
import HeraldFCMCore
import HeraldPushCore
import HeraldStore
import HeraldTestSupport
import HeraldWebPushCore
import Testing

/// A database an older Herald left (schema v14: one credential table per push service, a typed
/// device column per service) opens under this version's schema with nothing lost: every
/// device's environment, FCM token kind and Web Push keys, now its `attributes`, and the shared
/// APNs provider token and FCM access token, now rows of the one credential ledger.
@Suite("Store migrations from an older Herald's database (SQLite, and PostgreSQL when configured)")
struct MigrationTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let keys = try! WebPushKeys(
        p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4", auth: "BTBZMqHH6r4Tts7J_aSIgg")
    static let endpoint = "https://push.example.com/wpush/v2/gAAAA"
    static let iPhone = String(repeating: "ab", count: 32)
    static let fid = "cXyZ0123456789_-abcdeF"

    /// The old ledger rows: APNs's `issued_at` in seconds, FCM's in milliseconds.
    static let oldLedgerRows = [
        "INSERT INTO apns_provider_tokens (team_id, key_id, jwt, issued_at) VALUES ('TEAM123456', 'ABC1234567', 'old.apns.jwt', 1799999400)",
        "INSERT INTO fcm_access_tokens (client_email, access_token, issued_at, expires_at) VALUES ('a@p.iam.gserviceaccount.com', 'ya29.old', 1799999000000, 1800003000000)",
    ]

    /// Devices of every platform as the v14 store wrote them: the APNs environment, the FCM token
    /// kind and the Web Push keys each in a typed column.
    static var oldDeviceRows: [String] {
        let ms = Int64(now.timeIntervalSince1970 * 1000)
        let columns = "app_id, platform, token, environment, device_id, created_at, updated_at, last_seen, token_kind, web_keys"
        return [
            "INSERT INTO apps (id, created_at) VALUES ('a', \(ms))",
            "INSERT INTO devices (\(columns)) VALUES ('a', 'ios', '\(iPhone)', 'production', NULL, \(ms), \(ms), \(ms), 'token', NULL)",
            "INSERT INTO devices (\(columns)) VALUES ('a', 'android', '\(fid)', 'sandbox', NULL, \(ms), \(ms), \(ms), 'fid', NULL)",
            "INSERT INTO devices (\(columns)) VALUES ('a', 'web', '\(endpoint)', 'production', NULL, \(ms), \(ms), \(ms), 'token', '\(keys.storedForm)')",
        ]
    }

    /// What the migrated store must still say.
    static func expectIntact(_ store: any Store) async throws {
        let devices = try await store.devices(app: "a", tokens: [iPhone, fid, endpoint])
        let byToken = Dictionary(uniqueKeysWithValues: devices.map { ($0.token, $0) })
        #expect(byToken[iPhone]?.attributes.apnsEnvironment == .production && byToken[iPhone]?.platform == .ios)
        #expect(byToken[fid]?.attributes.tokenKind == .fid && byToken[fid]?.attributes.apnsEnvironment == .sandbox)
        #expect(byToken[endpoint]?.attributes.webPushKeys == keys)
        // The shared APNs token is still the one every instance sends (10 minutes old: kept).
        let apns = try await store.providerToken(
            teamID: "TEAM123456", keyID: "ABC1234567", now: now, refreshAfter: .seconds(3000), minimumAge: .seconds(1200), rejected: nil,
            mint: { _ in "new.apns.jwt" })
        #expect(apns.jwt == "old.apns.jwt" && !apns.minted && apns.issuedAt == Date(timeIntervalSince1970: 1_799_999_400))
        let fcm = try await store.accessToken(
            account: "a@p.iam.gserviceaccount.com", now: now, refreshMargin: .seconds(300), rejected: nil,
            exchange: { FCMAccessToken(value: "ya29.new", expiresAt: now.addingTimeInterval(3600)) })
        #expect(fcm.token.value == "ya29.old" && !fcm.exchanged && fcm.token.expiresAt == Date(timeIntervalSince1970: 1_800_003_000))
    }

    @Test("SQLite: a v14 database keeps its devices and its shared credentials")
    func sqlite() async throws {
        try await Self.withOldSQLite(at: "v14", rows: Self.oldDeviceRows + Self.oldLedgerRows) { store, _ in
            try await Self.expectIntact(store)
        }
    }

    /// A SQLite file at schema `version` holding `rows`, then opened and migrated by this version.
    static func withOldSQLite(at version: String, rows: [String], _ body: (SQLiteStore, String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-migration-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("herald.sqlite").path
        do {
            let old = try SQLiteStore(path: path)
            try await old.migrate(upTo: version)
        }
        try await DatabaseQueue(path: path).write { db in
            for statement in rows { try db.execute(sql: statement) }
        }
        let store = try SQLiteStore(path: path)
        try await store.migrate()
        try await body(store, path)
    }

    @Test("SQLite: a v19 database's events keep their rows and their dedupe keys hold")
    func sqliteDedupeKeys() async throws {
        let rows = [
            "INSERT INTO apps (id, created_at) VALUES ('kasia', 0)",
            """
            INSERT INTO events (id, app_id, template, push_type, priority, payload, created_at, expires_at, dedupe_key, fcm_data)
            VALUES ('old-1', 'kasia', 'custom', 'alert', 10, x'7b7d', 1799999000000, 1800086400000, 'matrix:old', '{"k":"v"}'),
                   ('old-2', 'kasia', 'custom', 'alert', 10, x'7b7d', 1799999000001, 1800086400000, NULL, NULL)
            """,
        ]
        try await Self.withOldSQLite(at: "v19", rows: rows) { store, path in
            // The copy's pages left the WAL file: it is given back, not kept at the table's size.
            let wal = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int
            #expect(wal == 0)
            let push = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array("{}".utf8))
            func event(_ id: String, _ key: String) -> NewEvent {
                NewEvent(id: id, app: "kasia", template: "custom", push: push, expiresAt: Self.now.addingTimeInterval(3_600), deviceRowIDs: [], dedupeKey: key)
            }
            #expect(try await store.enqueue([event("new-1", "matrix:old"), event("new-2", "matrix:new")], checkpoint: nil, now: Self.now) == ["new-2": 0])
            let stored = try await DatabaseQueue(path: path).read { db in
                try Row.fetchAll(db, sql: "SELECT id, dedupe_key, fcm_data FROM events ORDER BY id")
            }
            #expect(stored.map { $0[0] as String } == ["new-2", "old-1", "old-2"])
            #expect(stored.map { $0[1] as String? } == ["matrix:new", "matrix:old", nil])
            #expect(stored[1][2] as String? == #"{"k":"v"}"#)
        }
    }

    @Test("PostgreSQL: a v14 database keeps its devices and its shared credentials", .enabled(if: TestPostgres.serverURL != nil))
    func postgres() async throws {
        try await TestPostgres.withDatabase(serverURL: try #require(TestPostgres.serverURL)) { url in
            var running: [Task<Void, Never>] = []
            defer { for task in running { task.cancel() } }
            func open() throws -> PostgresStore {
                let store = try PostgresStore(url: url)
                running.append(Task { await store.run() })
                return store
            }
            let old = try open()
            try await old.migrate(upTo: "v14")
            try await TestPostgres.execute(Self.oldDeviceRows + Self.oldLedgerRows, databaseURL: url)
            let store = try open()
            try await store.migrate()
            try await Self.expectIntact(store)
        }
    }
}
