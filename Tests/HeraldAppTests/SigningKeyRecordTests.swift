import Foundation
@testable import HeraldApp
import HeraldDelivery
import HeraldPushCore
import HeraldPushService
import HeraldStore
import Testing

/// Instances and restarts on one database sign with one key: the store records it, and a start
/// with another is refused unless it names the key it replaces.
@Suite("HeraldApp: one signing key per app and database")
struct SigningKeyRecordTests {
    /// The apps `herald serve` would run with this key file (nil: a key made at start).
    static func apps(key: PushSigningKey?, in directory: URL) throws -> [ConfigFile.App] {
        var environment: [String: String] = [:]
        if let key {
            let path = directory.appendingPathComponent("key-\(UUID()).pem").path
            try Data(key.pem.utf8).write(to: URL(fileURLWithPath: path))
            environment["HERALD_SIGNING_KEY_PATH"] = path
        }
        return try ServeSettings(environment: environment).apps
    }

    static func refusal(_ body: () async throws -> Void) async -> HeraldConfigurationError? {
        do { try await body(); return nil } catch let error as HeraldConfigurationError { return error } catch { return nil }
    }

    @Test("recorded at the first start; another key, or a key made at start after it, refused naming HERALD_SIGNING_KEY_PATH; replaced only on purpose")
    func oneKey() async throws {
        try await HeraldAppTests.withDirectory { directory in
            let store = try SQLiteStore(path: directory.appendingPathComponent("herald.sqlite").path, platforms: PushServiceRegistry.builtIn.platforms)
            try await store.migrate()
            let first = PushSigningKey(), second = PushSigningKey()
            let firstApps = try Self.apps(key: first, in: directory), secondApps = try Self.apps(key: second, in: directory)
            // A key made at start, with nothing recorded: SQLite's embedded default runs.
            try await SigningKeyRecord.check(try Self.apps(key: nil, in: directory), store: store, shared: false, replacing: [])
            try await SigningKeyRecord.check(firstApps, store: store, shared: false, replacing: [])
            try await SigningKeyRecord.check(firstApps, store: store, shared: false, replacing: [])  // a restart with the same file
            let other = await Self.refusal { try await SigningKeyRecord.check(secondApps, store: store, shared: false, replacing: []) }
            #expect(other?.field == "HERALD_SIGNING_KEY_PATH")
            #expect(other?.message.contains(first.publicKeyBase64URL.prefix(12)) == true, "\(String(describing: other))")
            let ephemeral = await Self.refusal { try await SigningKeyRecord.check(try Self.apps(key: nil, in: directory), store: store, shared: false, replacing: []) }
            #expect(ephemeral?.field == "HERALD_SIGNING_KEY_PATH")
            // Replaced on purpose: the second key is recorded, and the first is now the stranger.
            try await SigningKeyRecord.check(secondApps, store: store, shared: false, replacing: [first.publicKeyBase64URL])
            try await SigningKeyRecord.check(secondApps, store: store, shared: false, replacing: [first.publicKeyBase64URL])
            #expect(await Self.refusal { try await SigningKeyRecord.check(firstApps, store: store, shared: false, replacing: []) } != nil)
        }
    }

    @Test("a database instances share (PostgreSQL) refuses a key made at start, even the first time")
    func sharedNeedsAFile() async throws {
        try await HeraldAppTests.withDirectory { directory in
            let store = try SQLiteStore(path: directory.appendingPathComponent("herald.sqlite").path, platforms: PushServiceRegistry.builtIn.platforms)
            try await store.migrate()
            let refused = await Self.refusal { try await SigningKeyRecord.check(try Self.apps(key: nil, in: directory), store: store, shared: true, replacing: []) }
            #expect(refused?.field == "HERALD_SIGNING_KEY_PATH")
            try await SigningKeyRecord.check(try Self.apps(key: PushSigningKey(), in: directory), store: store, shared: true, replacing: [])
        }
    }
}
