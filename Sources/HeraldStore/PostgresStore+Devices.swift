public import Foundation
public import HeraldCore
import HeraldPushCore
import KasiaProtocol
import PostgresNIO

/// PostgresStore: registrations.
extension PostgresStore {
    public func register(_ registrations: [Registration], now: Date) async throws -> [DeviceRecord] {
        // Many (an import): a few statements for all of them, through arrays.
        if registrations.count > 1, !registrations.contains(where: \.replacesDeviceTokens) {
            return try await registerInBulk(registrations, now: now)
        }
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

    /// `register` for many at once, with the same effect: each token's last registration wins,
    /// its dead-token record goes, and its watch set is replaced.
    func registerInBulk(_ registrations: [Registration], now: Date) async throws -> [DeviceRecord] {
        struct Name: Hashable { var app: String, token: String }
        var last: [Name: Int] = [:]
        for (i, r) in registrations.enumerated() { last[Name(app: r.app, token: r.token.value)] = i }
        let chosen = last.values.sorted().map { registrations[$0] }
        return try await leased { [self] client in
            let ms = now.milliseconds
            return try await client.withTransaction(logger: logger) { db in
                let apps = Array(Set(chosen.map(\.app))).sorted()
                try await db.query(
                    "INSERT INTO apps (id, created_at) SELECT a, \(ms) FROM unnest(\(apps)::TEXT[]) AS t(a) ON CONFLICT (id) DO NOTHING",
                    logger: logger)
                let appIDs = chosen.map(\.app), tokens = chosen.map(\.token.value)
                try await db.query(
                    """
                    DELETE FROM dead_tokens WHERE (app_id, token) IN (SELECT a, t FROM unnest(\(appIDs)::TEXT[], \(tokens)::TEXT[]) AS u(a, t))
                    """, logger: logger)
                let rows = try await db.query(
                    """
                    INSERT INTO devices (app_id, platform, token, attributes, device_id, created_at, updated_at, last_seen)
                    SELECT a, p, t, s, NULLIF(d, ''), \(ms), \(ms), \(ms)
                    FROM unnest(\(appIDs)::TEXT[], \(chosen.map(\.token.platform.rawValue))::TEXT[], \(tokens)::TEXT[],
                                \(chosen.map(\.storedAttributes.storedForm))::TEXT[], \(chosen.map { $0.deviceID ?? "" })::TEXT[]) AS u(a, p, t, s, d)
                    ON CONFLICT (app_id, token) DO UPDATE SET platform = excluded.platform, attributes = excluded.attributes,
                      device_id = excluded.device_id,
                      updated_at = excluded.updated_at, last_seen = excluded.last_seen, disabled_reason = NULL, registered_by = NULL
                    RETURNING \(unescaped: Self.deviceColumns)
                    """, logger: logger)
                var byName: [Name: DeviceRecord] = [:]
                for device in try await Self.devices(rows) { byName[Name(app: device.app, token: device.token)] = device }
                var rowIDs: [Int64] = [], keyRows: [Int64] = [], roles: [String] = [], keys: [String] = []
                var routeRows: [Int64] = [], peers: [String] = [], aliases: [String] = []
                for r in chosen {
                    guard let row = byName[Name(app: r.app, token: r.token.value)]?.rowID else { throw PostgresStoreError("the device was not written") }
                    rowIDs.append(row)
                    for key in r.watchSet.watched { keyRows.append(row); roles.append("watch"); keys.append(key.description) }
                    for own in r.watchSet.own { keyRows.append(row); roles.append("own"); keys.append(own.string) }
                    for (peer, names) in r.watchSet.routes {
                        for alias in names { routeRows.append(row); peers.append(peer.string); aliases.append(alias) }
                    }
                }
                try await db.query("DELETE FROM watch_keys WHERE device_row = ANY(\(rowIDs))", logger: logger)
                try await db.query("DELETE FROM contextual_routes WHERE device_row = ANY(\(rowIDs))", logger: logger)
                if !keys.isEmpty {
                    try await db.query(
                        "INSERT INTO watch_keys (device_row, role, key) SELECT * FROM unnest(\(keyRows)::BIGINT[], \(roles)::TEXT[], \(keys)::TEXT[])",
                        logger: logger)
                }
                if !peers.isEmpty {
                    try await db.query(
                        "INSERT INTO contextual_routes (device_row, peer, alias) SELECT * FROM unnest(\(routeRows)::BIGINT[], \(peers)::TEXT[], \(aliases)::TEXT[])",
                        logger: logger)
                }
                return try registrations.map { r in
                    guard let device = byName[Name(app: r.app, token: r.token.value)] else { throw PostgresStoreError("the device was not written") }
                    return device
                }
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
}
