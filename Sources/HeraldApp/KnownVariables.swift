import HeraldPushCore
import HeraldPushService

/// The `HERALD_*` variables `herald serve` reads. A variable of that prefix that none of them
/// names stops the start (exit 2) naming the nearest known one, as the YAML loader refuses an
/// unknown key: a misspelled `HERALD_PORT` would otherwise start on the default port unseen.
/// `HERALD_TEST_*` is left to test tools (the store suite's `HERALD_TEST_POSTGRES_URL`).
enum KnownVariables {
    /// What `ServeSettings` and the command line read themselves; the services name theirs.
    static let serve: Set<String> = [
        "HERALD_CONFIG", "HERALD_LOG_LEVEL", "HERALD_LOG_FORMAT",
        "HERALD_HTTP_HOST", "HERALD_HTTP_PORT", "HERALD_ADMIN_HOST", "HERALD_ADMIN_PORT", "HERALD_DATABASE_URL",
        "HERALD_STALE_AFTER_DAYS", "HERALD_RETENTION_HOURS", "HERALD_OUTBOX_LEASE_SECONDS", "HERALD_SHUTDOWN_GRACE_SECONDS",
        "HERALD_KASPA_WRPC_URL", "HERALD_KASPA_MAX_AGE", "HERALD_KASPA_NETWORK",
        "HERALD_HTTP_IDLE_TIMEOUT_SECONDS", "HERALD_HTTP_REQUEST_TIMEOUT_SECONDS", "HERALD_MAX_CONNECTIONS", "HERALD_EVENT_LOOPS",
        "HERALD_TRUSTED_PROXIES", "HERALD_TRUSTED_PROXY_HEADER", "HERALD_CORS_ORIGINS",
        "HERALD_MAX_WATCH_KEYS", "HERALD_MAX_ALIASES", "HERALD_MAX_BODY_BYTES", "HERALD_MAX_BATCH_BODY_BYTES",
        "HERALD_MAX_DELIVERIES_PER_REQUEST", "HERALD_DISMISS_WINDOW_SECONDS", "HERALD_FANOUT_THRESHOLD", "HERALD_FANOUT_PAGE", "HERALD_MAX_DEVICES",
        "HERALD_REGISTRATION_RATE", "HERALD_REGISTRATION_BURST", "HERALD_PUBLISH_RATE", "HERALD_PUBLISH_BURST",
        "HERALD_MATRIX_APPS", "HERALD_MATRIX_ALLOWED_CLIENTS", "HERALD_MATRIX_RATE", "HERALD_MATRIX_BURST",
        "HERALD_PUBLISH_KEYS", "HERALD_REGISTRATION_POLICY", "HERALD_REGISTRATION_KEYS",
        "HERALD_REGISTRATION_JWT_SECRET", "HERALD_REGISTRATION_JWT_PUBLIC_KEY", "HERALD_PRIVACY", "HERALD_GHOSTTALK_SEND_ENABLED", "HERALD_CRITICAL_ALERTS",
        "HERALD_SIGNING_KEY_REPLACES", "HERALD_MATRIX_REACHES_REGISTERED_DEVICES",
    ]

    /// Every variable known with `pushServices`' own.
    static func all(_ pushServices: PushServiceRegistry) -> Set<String> {
        pushServices.services.reduce(serve.union(SealingSettings.fileKeys.values)) { $0.union($1.variables) }
    }

    /// The refusal for the first unknown `HERALD_*` variable of `environment` (sorted), or nil.
    static func refusal(_ environment: [String: String], pushServices: PushServiceRegistry) -> HeraldConfigurationError? {
        let known = all(pushServices)
        guard
            let unknown = environment.keys.filter({ $0.hasPrefix("HERALD_") && !$0.hasPrefix("HERALD_TEST_") && !known.contains($0) })
                .sorted().first
        else { return nil }
        // Nearest: sharing the most of its words (`HERALD_PORT` → a `…_PORT`), then by edit distance.
        let words = unknown.split(separator: "_")
        func missing(_ name: String) -> Int { let own = Set(name.split(separator: "_")); return words.filter { !own.contains($0) }.count }
        let nearest = known.min { (missing($0), distance(unknown, $0), $0) < (missing($1), distance(unknown, $1), $1) }
        return HeraldConfigurationError(
            field: unknown,
            message: "is not a Herald variable" + (nearest.map { "; did you mean \($0)?" } ?? "") + " (docs/configuration.md lists them all)")
    }

    /// Levenshtein's edit distance over bytes.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        var previous = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in stride(from: 1, through: b.count, by: 1) {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return a.isEmpty ? b.count : previous[b.count]
    }
}
