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
}
