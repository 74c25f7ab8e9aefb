public import Foundation
import GRDB
public import HeraldCore
import HeraldPushCore

/// SQLiteStore: registrations.
extension SQLiteStore {
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
    static let deadAtSQL = "SELECT dead_at FROM dead_tokens WHERE app_id = ? AND token = ?"
    /// One row: the device's columns (NULL when there is none; `registered_by` then `attributes` last), then `dead_at`.
    static let admitSQL = """
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

    static func devices(_ db: SQLiteReadConnection, app: String, watching key: String) throws -> [DeviceRecord] {
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

    func devices(app: String, column: String, in values: [String]) async throws -> [DeviceRecord] {
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
}
