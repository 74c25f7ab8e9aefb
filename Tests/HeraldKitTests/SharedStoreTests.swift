import Foundation
import HeraldKit
import HeraldTestSupport
import Testing

@Suite struct SharedStoreTests {
    static func temporaryDirectory() -> URL {
        URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("heraldkit-store-\(UUID().uuidString)")
    }

    static func message(_ txID: String, _ text: String = "hi") -> SharedRecord {
        .message(StoredMessage(txID: txID, sender: "kaspa:a", kind: "contextual_message", plaintext: text, timestamp: 1))
    }

    @Test func contactsMessagesAndPendingFetches() throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try SharedStore(directory: dir)
        try store.setContacts([Contact(address: "kaspa:a", name: "Alice")])
        try store.record(Self.message("t1", "secret text"))
        try store.record(Self.message("t1", "again"))  // the same transaction is kept once
        try store.record(.pendingFetch(PendingFetch(txID: "t2", sender: "kaspa:a", kind: "payment", timestamp: 2)))
        // Another handle on the same directory (the other process) sees it all.
        let other = try SharedStore(directory: dir)
        let contents = try other.contents()
        #expect(contents.contacts == [Contact(address: "kaspa:a", name: "Alice")])
        #expect(contents.messages.map(\.plaintext) == ["secret text"])
        #expect(contents.pendingFetches.map(\.txID) == ["t2"])
        // Decrypted text is gone from disk once the app consumes it.
        #expect(try other.consumeMessages().map(\.txID) == ["t1"])
        #expect(try store.contents().messages.isEmpty)
        let onDisk = try Data(contentsOf: dir.appendingPathComponent("herald-shared.json"))
        #expect(!String(decoding: onDisk, as: UTF8.self).contains("secret text"))
        // A message that opens later clears its pending fetch.
        try store.record(Self.message("t2", "opened"))
        #expect(try store.contents().pendingFetches.isEmpty)
        try store.record(.pendingFetch(PendingFetch(txID: "t3", sender: "kaspa:a", kind: "handshake", timestamp: 3)))
        try store.removePendingFetches(txIDs: ["t3"])
        #expect(try store.contents().pendingFetches.isEmpty)
    }

    @Test func boundedOldestFirst() throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try SharedStore(directory: dir, limits: .init(maximumMessages: 3, maximumPendingFetches: 2))
        for i in 0..<10 {
            try store.record(Self.message("m\(i)"))
            try store.record(.pendingFetch(PendingFetch(txID: "p\(i)", sender: "kaspa:a", kind: "payment", timestamp: Int64(i))))
        }
        let contents = try store.contents()
        #expect(contents.messages.map(\.txID) == ["m7", "m8", "m9"])
        #expect(contents.pendingFetches.map(\.txID) == ["p8", "p9"])
    }

    @Test func aCorruptFileIsATypedError() throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try SharedStore(directory: dir)
        try Data("{not json".utf8).write(to: dir.appendingPathComponent("herald-shared.json"))
        #expect(throws: SharedStoreError.self) { try store.contents() }
    }

    /// Two processes (the app and its extension) write at once, 1,000 writes each, while this
    /// one keeps reading: nothing is lost and no read ever sees a torn file.
    @Test func twoProcessesWritingAtOnceLoseNothing() async throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try SharedStore(directory: dir)
        let binary = try builtExecutable("SharedStoreWriter")
        let processes = try ["app", "extension"].map { prefix in
            let p = Process()
            p.executableURL = binary
            p.arguments = [dir.path, prefix, "1000"]
            try p.run()
            return p
        }
        var reads = 0
        while processes.contains(where: \.isRunning) {
            let contents = try store.contents()  // throws .corrupt on a torn file
            #expect(contents.messages.count + contents.pendingFetches.count <= 2_000)
            reads += 1
            try await Task.sleep(nanoseconds: 1_000_000)
        }
        for p in processes {
            p.waitUntilExit()
            #expect(p.terminationStatus == 0)
        }
        let contents = try store.contents()
        let ids = Set(contents.messages.map(\.txID) + contents.pendingFetches.map(\.txID))
        let expected = Set(["app", "extension"].flatMap { prefix in (0..<1000).map { "\(prefix)-\($0)" } })
        #expect(ids == expected)
        #expect(contents.messages.count == 1000 && contents.pendingFetches.count == 1000)
        #expect(reads > 0)
        // Only the store and its lock remain: no temporary file left behind.
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dir.path)) == ["herald-shared.json", "herald-shared.lock"])
    }
}
