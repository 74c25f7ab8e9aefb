
/// SQLiteStore: leadership.
extension SQLiteStore {
    public func withLeadership(_ name: String, poll: Duration, _ body: @escaping @Sendable () async -> Void) async throws {
        await body()
    }
}
