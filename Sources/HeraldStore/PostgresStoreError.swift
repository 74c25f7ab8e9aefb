
/// A PostgreSQL store that cannot be set up as asked.
public struct PostgresStoreError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
