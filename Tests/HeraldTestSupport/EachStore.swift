import Foundation
public import HeraldStore

/// The store suite runs on every backend: SQLite always, and PostgreSQL when
/// `HERALD_TEST_POSTGRES_URL` names a server (`.ci/run` starts one) — each run on a fresh
/// database. `reopen` opens a second store on the same database (a restarted process, or a
/// second instance).
public func withEachStore(_ body: (any Store, _ reopen: () async throws -> any Store) async throws -> Void) async throws {
    try await withStore { store, path in
        try await body(store, {
            let reopened = try SQLiteStore(path: path)
            try await reopened.migrate()
            return reopened
        })
    }
    guard let url = TestPostgres.serverURL else { return }
    try await TestPostgres.withDatabase(serverURL: url) { databaseURL in
        var running: [Task<Void, Never>] = []
        defer { for task in running { task.cancel() } }
        func open() async throws -> any Store {
            let store = try PostgresStore(url: databaseURL)
            running.append(Task { await store.run() })
            try await store.migrate()
            return store
        }
        try await body(try await open(), open)
    }
}

/// A store on a fresh SQLite file (and the file's path), removed afterwards.
public func withStore<T>(_ body: (SQLiteStore, String) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-store-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = directory.appendingPathComponent("herald.sqlite").path
    let store = try SQLiteStore(path: path)
    try await store.migrate()
    return try await body(store, path)
}
