import GRDB

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
    mutating func apply(_ db: Database, _ statements: WriterStatements) throws {
        guard deltas.values.contains(where: { $0 != 0 }) else {
            deltas = [:]
            return
        }
        // Once per key and transaction: its values are bound directly.
        let update = try statements.statement("UPDATE delivery_counts SET n = n + ? WHERE state = ? AND reason = ?", db)
        let values = SQLiteParameters(update)
        for (key, n) in deltas where n != 0 {
            try values.integer(1, Int64(n))
            try values.text(2, key.state)
            try values.text(3, key.reason)
            try values.execute()
            if db.changesCount == 0 {
                try statements.statement("INSERT INTO delivery_counts (state, reason, n) VALUES (?, ?, ?)", db)
                    .execute(arguments: [key.state, key.reason, n])
            }
        }
        deltas = [:]
    }
}
