/// The schema, by version. Times are unix milliseconds (BIGINT), text ids, and SQL that
/// PostgreSQL runs as well (its store maps INTEGER PRIMARY KEY to BIGSERIAL and BLOB to BYTEA).
enum Schema {
    /// Every version, in order; both stores apply the ones a database lacks.
    static let versions: [(String, String)] = [("v1", v1), ("v2", v2), ("v3", v3), ("v4", v4), ("v5", v5), ("v6", v6), ("v7", v7)]

    static let v1 = """
        CREATE TABLE apps (
          id TEXT PRIMARY KEY,
          created_at BIGINT NOT NULL
        );
        CREATE TABLE devices (
          id INTEGER PRIMARY KEY,
          app_id TEXT NOT NULL REFERENCES apps (id),
          platform TEXT NOT NULL,
          token TEXT NOT NULL,
          environment TEXT NOT NULL,
          device_id TEXT,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL,
          last_seen BIGINT NOT NULL,
          disabled_reason TEXT,
          UNIQUE (app_id, token)
        );
        CREATE INDEX devices_device_id ON devices (app_id, device_id);
        CREATE INDEX devices_last_seen ON devices (last_seen);
        CREATE TABLE watch_keys (
          device_row BIGINT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
          role TEXT NOT NULL,
          key TEXT NOT NULL,
          PRIMARY KEY (device_row, role, key)
        );
        CREATE INDEX watch_keys_key ON watch_keys (key);
        CREATE TABLE contextual_routes (
          device_row BIGINT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
          peer TEXT NOT NULL,
          alias TEXT NOT NULL,
          PRIMARY KEY (device_row, peer, alias)
        );
        CREATE INDEX contextual_routes_peer ON contextual_routes (peer);
        CREATE TABLE events (
          id TEXT PRIMARY KEY,
          app_id TEXT NOT NULL REFERENCES apps (id),
          template TEXT NOT NULL,
          push_type TEXT NOT NULL,
          priority INTEGER NOT NULL,
          collapse_id TEXT,
          payload BLOB NOT NULL,
          created_at BIGINT NOT NULL,
          expires_at BIGINT NOT NULL,
          dedupe_key TEXT UNIQUE
        );
        CREATE TABLE deliveries (
          id INTEGER PRIMARY KEY,
          event_id TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
          device_row BIGINT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
          app_id TEXT NOT NULL,
          state TEXT NOT NULL,
          attempts INTEGER NOT NULL,
          next_attempt_at BIGINT NOT NULL,
          lease_until BIGINT,
          apns_id TEXT NOT NULL,
          last_reason TEXT,
          expires_at BIGINT NOT NULL,
          created_at BIGINT NOT NULL,
          updated_at BIGINT NOT NULL
        );
        CREATE INDEX deliveries_due ON deliveries (state, next_attempt_at);
        CREATE INDEX deliveries_lease ON deliveries (state, lease_until);
        CREATE INDEX deliveries_device ON deliveries (device_row, state);
        CREATE TABLE chain_checkpoints (
          source TEXT PRIMARY KEY,
          block_hash TEXT NOT NULL,
          daa_score BIGINT NOT NULL,
          updated_at BIGINT NOT NULL
        );
        """

    /// Each app's outbox lane claims only its own deliveries.
    static let v2 = """
        CREATE INDEX deliveries_app_due ON deliveries (app_id, state, next_attempt_at);
        CREATE INDEX deliveries_app_lease ON deliveries (app_id, state, lease_until);
        DROP INDEX deliveries_lease;
        """

    /// One APNs provider token per key, shared by every instance on this database.
    static let v3 = """
        CREATE TABLE apns_provider_tokens (
          team_id TEXT NOT NULL,
          key_id TEXT NOT NULL,
          jwt TEXT NOT NULL,
          issued_at BIGINT NOT NULL,
          PRIMARY KEY (team_id, key_id)
        );
        """

    /// Android: a device's token is an FCM registration token or a Firebase Installation ID
    /// (`token_kind`); each push service has its own lane per app, which claims by platform (so a
    /// paused FCM lane never holds APNs pushes back); a `custom` event's verbatim FCM data map;
    /// one FCM access token per service account, shared by every instance.
    static let v4 = """
        ALTER TABLE devices ADD COLUMN token_kind TEXT NOT NULL DEFAULT 'token';
        ALTER TABLE deliveries ADD COLUMN platform TEXT NOT NULL DEFAULT 'ios';
        ALTER TABLE events ADD COLUMN fcm_data TEXT;
        UPDATE deliveries SET platform = (SELECT platform FROM devices WHERE devices.id = deliveries.device_row);
        CREATE INDEX deliveries_lane_due ON deliveries (app_id, platform, state, next_attempt_at);
        CREATE INDEX deliveries_lane_lease ON deliveries (app_id, platform, state, lease_until);
        DROP INDEX deliveries_app_due;
        DROP INDEX deliveries_app_lease;
        CREATE TABLE fcm_access_tokens (
          client_email TEXT PRIMARY KEY,
          access_token TEXT NOT NULL,
          issued_at BIGINT NOT NULL,
          expires_at BIGINT NOT NULL
        );
        """

    /// One index less to rewrite on every state change of a delivery (enqueue, claim, outcome):
    /// lapsed leases are found through `deliveries_lane_due`, whose `(app_id, platform, state)`
    /// prefix narrows them to the lane's few deliveries in flight.
    static let v5 = """
        DROP INDEX deliveries_lane_lease;
        """

    /// Web Push: a subscription's endpoint is its device's token and its keys (`<p256dh>.<auth>`,
    /// base64url) sit beside it.
    static let v6 = """
        ALTER TABLE devices ADD COLUMN web_keys TEXT;
        """

    /// Retention: the oldest events are found by creation, and an event's deliveries by its id
    /// (deleting an event also looks its deliveries up, for the cascade).
    static let v7 = """
        CREATE INDEX events_created ON events (created_at, id);
        CREATE INDEX deliveries_event ON deliveries (event_id);
        """

    /// Counters `/v1/stats` reads instead of counting rows: deliveries by state (and, for
    /// failed and dropped ones, by reason) and devices by app and platform, kept by triggers in
    /// the transaction that changes the rows, whichever code path changes them (enqueue, claim,
    /// outcome, expiry, a device's removal and its cascade, retention). Each store has its own
    /// version 8. SQLite has one writer: a delete (a device's cascade, retention) and a device's
    /// change update the counter rows from triggers, and the delivery hot paths (enqueue, claim,
    /// outcomes, expiry) count in the store's own transaction (`DeliveryCounts`), once per key.
    static let countersVersion = "v8"

    /// Versions after the counters, the same SQL on both stores, applied in order after them.
    static let laterVersions: [(String, String)] = [("v9", v9), ("v10", v10)]

    /// Tokens a push service called dead (APNs's 410 and BadDeviceToken, FCM's UNREGISTERED, a
    /// Web Push 404 or 410), kept after their device is deleted: a request that names its device
    /// itself, with no registration step (a Matrix pusher's pushkey), is told the token is dead
    /// instead of the device being created again. `dead_at` is the push service's moment (APNs's
    /// timestamp) or the answer's; a pusher set after it is alive again. Pruned after 30 days.
    static let v9 = """
        CREATE TABLE dead_tokens (
          app_id TEXT NOT NULL,
          token TEXT NOT NULL,
          reason TEXT NOT NULL,
          dead_at BIGINT NOT NULL,
          PRIMARY KEY (app_id, token)
        );
        CREATE INDEX dead_tokens_dead_at ON dead_tokens (dead_at);
        """

    /// A delivery's device is found by the row id alone. With the state in the index, every
    /// outcome (a state change) moved the delivery's entry in it: one more page at a random place
    /// per push in each commit, since devices are many. Only the device-wide changes read it (a
    /// token's Retry-After, a disabled token's drops, a device's cascade), and they check the
    /// state on the device's rows.
    static let v10 = """
        DROP INDEX deliveries_device;
        CREATE INDEX deliveries_device_row ON deliveries (device_row);
        """

    /// Versions after each store's own, the same SQL on both, applied last.
    static let routeVersions: [(String, String)] = [("v12", v12), ("v13", v13), ("v14", v14), ("v15", v15), ("v16", v16), ("v17", v17), ("v18", v18), ("v19", v19)]

    /// Which route made a device: NULL for the registration API (native and the apps' routes),
    /// `matrix` for a Matrix notify's pushkey. A notify refreshes only devices it made: it names
    /// a device without credentials, so it may not rewrite one registered another way.
    static let v12 = """
        ALTER TABLE devices ADD COLUMN registered_by TEXT;
        """

    /// Chain blocks a chain source passed, to resume from when the node forgets the checkpoint.
    static let v13 = """
        CREATE TABLE chain_anchors (
          source TEXT NOT NULL,
          block_hash TEXT NOT NULL,
          daa_score BIGINT NOT NULL,
          block_time BIGINT NOT NULL,
          PRIMARY KEY (source, block_hash)
        );
        CREATE INDEX chain_anchors_time ON chain_anchors (source, block_time);
        """

    /// The request that created an event, so any instance's lines about its deliveries name it.
    static let v14 = """
        ALTER TABLE events ADD COLUMN request_id TEXT;
        """

    /// One credential ledger for every push service: a row per (service, key) — APNs's provider
    /// token per `<team>.<key>`, FCM's access token per service account — replacing a table per
    /// service. Times in milliseconds; `expires_at` where the service gives one.
    static let v15 = """
        CREATE TABLE credentials (
          service TEXT NOT NULL,
          key TEXT NOT NULL,
          token TEXT NOT NULL,
          issued_at BIGINT NOT NULL,
          expires_at BIGINT,
          PRIMARY KEY (service, key)
        );
        INSERT INTO credentials (service, key, token, issued_at, expires_at)
          SELECT 'apns', team_id || '.' || key_id, jwt, issued_at * 1000, NULL FROM apns_provider_tokens;
        INSERT INTO credentials (service, key, token, issued_at, expires_at)
          SELECT 'fcm', client_email, access_token, issued_at, expires_at FROM fcm_access_tokens;
        DROP TABLE apns_provider_tokens;
        DROP TABLE fcm_access_tokens;
        """

    /// A device's per-service values in one `attributes` column (`DeviceAttributes`: a JSON object
    /// of strings) instead of a typed column per service: the APNs environment, the FCM token kind
    /// and the Web Push keys move into it, every device keeping its values.
    static let v16 = """
        ALTER TABLE devices ADD COLUMN attributes TEXT NOT NULL DEFAULT '{}';
        UPDATE devices SET attributes = '{"environment":"' || environment || '"'
          || CASE WHEN token_kind <> 'token' THEN ',"token_kind":"' || token_kind || '"' ELSE '' END
          || CASE WHEN web_keys IS NOT NULL THEN ',"web_keys":"' || web_keys || '"' ELSE '' END || '}';
        ALTER TABLE devices DROP COLUMN environment;
        ALTER TABLE devices DROP COLUMN token_kind;
        ALTER TABLE devices DROP COLUMN web_keys;
        """

    /// Read markers (SPEC §15): each sibling's dismissal of a conversation, one row per device and
    /// conversation (`due_at` set while armed, `sent_at` when it last went out, `generation` counting
    /// the markers merged into it), and the digests of markers seen, against replays.
    static let v17 = """
        CREATE TABLE dismissals (
          device_row BIGINT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
          conversation TEXT NOT NULL,
          app_id TEXT NOT NULL,
          up_to TEXT NOT NULL,
          issued_at BIGINT NOT NULL,
          marked_at BIGINT NOT NULL,
          generation BIGINT NOT NULL,
          due_at BIGINT,
          sent_at BIGINT,
          PRIMARY KEY (device_row, conversation)
        );
        CREATE INDEX dismissals_due ON dismissals (due_at);
        CREATE INDEX dismissals_marked ON dismissals (marked_at);
        CREATE TABLE read_markers (
          digest TEXT PRIMARY KEY,
          expires_at BIGINT NOT NULL
        );
        CREATE INDEX read_markers_expires ON read_markers (expires_at);
        """

    /// Fan-out jobs (issue 59): an event to many devices commits with a job, not a delivery per
    /// device; the expander turns the job into deliveries a page at a time, moving its cursor
    /// (`key_index` into `keys`, then the last device row read) in the same transaction. `keys` is
    /// a JSON array of lookup keys, `excluded` of device ids, `kasia` the routing fields of a Kasia
    /// event (JSON, or NULL). `devices` counts the watchers when the job started (exact once
    /// `finished_at` is set), `expanded` the deliveries made. Watchers page in device order through
    /// `(key, device_row)` and `(peer, device_row)`, which replace the indexes on the key alone.
    static let v18 = """
        CREATE TABLE fanouts (
          event_id TEXT PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
          app_id TEXT NOT NULL,
          keys TEXT NOT NULL,
          excluded TEXT NOT NULL,
          kasia TEXT,
          key_index BIGINT NOT NULL,
          cursor_row BIGINT NOT NULL,
          devices BIGINT,
          expanded BIGINT NOT NULL,
          created_at BIGINT NOT NULL,
          finished_at BIGINT
        );
        CREATE INDEX fanouts_open ON fanouts (finished_at, created_at);
        DROP INDEX watch_keys_key;
        CREATE INDEX watch_keys_key ON watch_keys (key, device_row);
        DROP INDEX contextual_routes_peer;
        CREATE INDEX contextual_routes_peer ON contextual_routes (peer, device_row);
        """

    /// Coalescing (issue 59): an event's key and window (`coalesce_seconds`, in ms), and one slot
    /// per device and key: when its next push may go and its delivery still waiting, which a newer
    /// event replaces (dropped, reason `coalesced`). `pending` names a delivery without a foreign
    /// key: one gone since is one no longer waiting.
    /// A fan-out's rows only where something must be remembered: a job's delivery, once sent,
    /// leaves no row (`events.fanout` says whose deliveries those are) and its job counts it
    /// (`fanouts.sent`), so retention drops a finished job with its event.
    static let v19 = """
        ALTER TABLE events ADD COLUMN fanout BOOLEAN NOT NULL DEFAULT FALSE;
        ALTER TABLE fanouts ADD COLUMN sent BIGINT NOT NULL DEFAULT 0;
        ALTER TABLE events ADD COLUMN coalesce_key TEXT;
        ALTER TABLE events ADD COLUMN coalesce_ms BIGINT;
        CREATE TABLE coalescing_slots (
          device_row BIGINT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
          key TEXT NOT NULL,
          next_slot BIGINT NOT NULL,
          pending BIGINT,
          PRIMARY KEY (device_row, key)
        );
        CREATE INDEX coalescing_slots_next ON coalescing_slots (next_slot);
        """

    /// Versions only SQLite applies, after `laterVersions`.
    static let sqliteLaterVersions: [(String, String)] = [("v11-sqlite", sqliteV11)]

    /// One index less to rewrite per delivery: `deliveries_due (state, next_attempt_at)` took a
    /// delivery's entry on insert and moved it on every state change (two pages per outcome), for
    /// the expiry sweep and the queue gauges alone, which now seek each lane's state through
    /// `deliveries_lane_due`. PostgreSQL keeps it: without skip scans (before version 18) it would
    /// read the table for them.
    static let sqliteV11 = """
        DROP INDEX deliveries_due;
        """

    /// Versions only SQLite applies, after `routeVersions`.
    static let sqliteRouteLaterVersions: [(String, String)] = [("v19-sqlite", sqliteV19)]

    /// Dedupe keys off the file's unique index, where each key, a hash, costs a random page per
    /// event (`SQLiteDedupeKeys` holds them in memory). The retention index carries the key, so
    /// the store reads them all from it when it opens. SQLite drops a column's `UNIQUE` only by
    /// copying the table; the migrator turns foreign keys off while it runs.
    static let sqliteV19 = """
        CREATE TABLE events_v19 (
          id TEXT PRIMARY KEY,
          app_id TEXT NOT NULL REFERENCES apps (id),
          template TEXT NOT NULL,
          push_type TEXT NOT NULL,
          priority INTEGER NOT NULL,
          collapse_id TEXT,
          payload BLOB NOT NULL,
          created_at BIGINT NOT NULL,
          expires_at BIGINT NOT NULL,
          dedupe_key TEXT,
          fcm_data TEXT,
          request_id TEXT,
          fanout BOOLEAN NOT NULL DEFAULT FALSE,
          coalesce_key TEXT,
          coalesce_ms BIGINT
        );
        INSERT INTO events_v19 (id, app_id, template, push_type, priority, collapse_id, payload, created_at, expires_at, dedupe_key,
          fcm_data, request_id, fanout, coalesce_key, coalesce_ms)
          SELECT id, app_id, template, push_type, priority, collapse_id, payload, created_at, expires_at, dedupe_key,
            fcm_data, request_id, fanout, coalesce_key, coalesce_ms FROM events ORDER BY created_at, id;
        DROP TABLE events;
        ALTER TABLE events_v19 RENAME TO events;
        CREATE INDEX events_created ON events (created_at, id, dedupe_key);
        """

    /// The counter key of a delivery row `row` (`NEW` or `OLD`): its reason only where it ended in one.
    static func reasonKey(_ row: String) -> String {
        "CASE WHEN \(row).state IN ('failed', 'dropped') THEN COALESCE(\(row).last_reason, 'unknown') ELSE '' END"
    }

    static let sqliteCounters = """
        CREATE TABLE delivery_counts (state TEXT NOT NULL, reason TEXT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (state, reason)) WITHOUT ROWID;
        CREATE TABLE device_counts (app_id TEXT NOT NULL, platform TEXT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (app_id, platform)) WITHOUT ROWID;
        INSERT INTO delivery_counts (state, reason, n) SELECT d.state, \(reasonKey("d")), COUNT(*) FROM deliveries d GROUP BY 1, 2;
        INSERT INTO device_counts (app_id, platform, n) SELECT app_id, platform, COUNT(*) FROM devices GROUP BY 1, 2;
        CREATE TRIGGER deliveries_count_delete AFTER DELETE ON deliveries BEGIN
          UPDATE delivery_counts SET n = n - 1 WHERE state = OLD.state AND reason = \(reasonKey("OLD"));
        END;
        CREATE TRIGGER devices_count_insert AFTER INSERT ON devices BEGIN
          UPDATE device_counts SET n = n + 1 WHERE app_id = NEW.app_id AND platform = NEW.platform;
          INSERT INTO device_counts (app_id, platform, n) SELECT NEW.app_id, NEW.platform, 1 WHERE changes() = 0;
        END;
        CREATE TRIGGER devices_count_update AFTER UPDATE OF app_id, platform ON devices
        WHEN OLD.app_id IS NOT NEW.app_id OR OLD.platform IS NOT NEW.platform BEGIN
          UPDATE device_counts SET n = n - 1 WHERE app_id = OLD.app_id AND platform = OLD.platform;
          UPDATE device_counts SET n = n + 1 WHERE app_id = NEW.app_id AND platform = NEW.platform;
          INSERT INTO device_counts (app_id, platform, n) SELECT NEW.app_id, NEW.platform, 1 WHERE changes() = 0;
        END;
        CREATE TRIGGER devices_count_delete AFTER DELETE ON devices BEGIN
          UPDATE device_counts SET n = n - 1 WHERE app_id = OLD.app_id AND platform = OLD.platform;
        END;
        """

    /// PostgreSQL: every instance writes, so a trigger that updated a shared counter row would
    /// serialize their transactions on it. Statement-level triggers append one delta row per
    /// key a statement changed (inserts never wait on each other); `compactCounters` folds the
    /// deltas into the totals, and reads add the deltas not folded yet. One statement each.
    static let postgresCounters: [String] = [
        "CREATE TABLE delivery_counts (state TEXT NOT NULL, reason TEXT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (state, reason))",
        "CREATE TABLE delivery_count_deltas (state TEXT NOT NULL, reason TEXT NOT NULL, n BIGINT NOT NULL)",
        "CREATE TABLE device_counts (app_id TEXT NOT NULL, platform TEXT NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (app_id, platform))",
        "CREATE TABLE device_count_deltas (app_id TEXT NOT NULL, platform TEXT NOT NULL, n BIGINT NOT NULL)",
        // Writers wait while the totals are first counted, so none is missed or counted twice.
        "LOCK TABLE deliveries, devices IN SHARE MODE",
        "INSERT INTO delivery_counts (state, reason, n) SELECT d.state, \(reasonKey("d")), COUNT(*) FROM deliveries d GROUP BY 1, 2",
        "INSERT INTO device_counts (app_id, platform, n) SELECT app_id, platform, COUNT(*) FROM devices GROUP BY 1, 2",
        """
        CREATE FUNCTION herald_count_deliveries() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP = 'INSERT' THEN
            INSERT INTO delivery_count_deltas (state, reason, n) SELECT r.state, \(reasonKey("r")), COUNT(*) FROM new_rows r GROUP BY 1, 2;
          ELSIF TG_OP = 'DELETE' THEN
            INSERT INTO delivery_count_deltas (state, reason, n) SELECT r.state, \(reasonKey("r")), -COUNT(*) FROM old_rows r GROUP BY 1, 2;
          ELSE
            INSERT INTO delivery_count_deltas (state, reason, n)
            SELECT state, reason, SUM(n) FROM (
              SELECT r.state, \(reasonKey("r")) AS reason, 1 AS n FROM new_rows r
              UNION ALL SELECT r.state, \(reasonKey("r")), -1 FROM old_rows r
            ) changed GROUP BY 1, 2 HAVING SUM(n) <> 0;
          END IF;
          RETURN NULL;
        END $$
        """,
        """
        CREATE FUNCTION herald_count_devices() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP = 'INSERT' THEN
            INSERT INTO device_count_deltas (app_id, platform, n) SELECT app_id, platform, COUNT(*) FROM new_rows GROUP BY 1, 2;
          ELSIF TG_OP = 'DELETE' THEN
            INSERT INTO device_count_deltas (app_id, platform, n) SELECT app_id, platform, -COUNT(*) FROM old_rows GROUP BY 1, 2;
          ELSE
            INSERT INTO device_count_deltas (app_id, platform, n)
            SELECT app_id, platform, SUM(n) FROM (
              SELECT app_id, platform, 1 AS n FROM new_rows UNION ALL SELECT app_id, platform, -1 FROM old_rows
            ) changed GROUP BY 1, 2 HAVING SUM(n) <> 0;
          END IF;
          RETURN NULL;
        END $$
        """,
        "CREATE TRIGGER deliveries_count_insert AFTER INSERT ON deliveries REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_count_deliveries()",
        "CREATE TRIGGER deliveries_count_update AFTER UPDATE ON deliveries REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_count_deliveries()",
        "CREATE TRIGGER deliveries_count_delete AFTER DELETE ON deliveries REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_count_deliveries()",
        "CREATE TRIGGER devices_count_insert AFTER INSERT ON devices REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_count_devices()",
        "CREATE TRIGGER devices_count_update AFTER UPDATE ON devices REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_count_devices()",
        "CREATE TRIGGER devices_count_delete AFTER DELETE ON devices REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION herald_count_devices()",
    ]
}
