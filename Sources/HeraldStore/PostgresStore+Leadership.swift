import PostgresNIO

/// PostgresStore: leadership.
extension PostgresStore {
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
}
