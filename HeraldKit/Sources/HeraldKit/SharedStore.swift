public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The store an app and its Notification Service Extension share (the reference's
/// SharedDataManager), kept as one JSON file in a directory — the App Group container on iOS.
///
/// Every change is a read-modify-write under an exclusive `flock` on a lock file beside it, and
/// lands by writing a temporary file and renaming it over the old one: two processes writing at
/// once lose nothing, and a reader never sees a torn file. Decrypted text stays only until the
/// app consumes it, and both lists are bounded (the oldest entries go first).
public struct SharedStore: Sendable {
    /// How much the store keeps.
    public struct Limits: Hashable, Sendable {
        public var maximumMessages: Int
        public var maximumPendingFetches: Int
        public init(maximumMessages: Int = 500, maximumPendingFetches: Int = 1_000) {
            self.maximumMessages = maximumMessages
            self.maximumPendingFetches = maximumPendingFetches
        }
    }

    /// Everything in the store.
    public struct Contents: Codable, Hashable, Sendable {
        public var contacts: [Contact] = []
        public var messages: [StoredMessage] = []
        public var pendingFetches: [PendingFetch] = []
        /// The app's signing key, trusted at the first registration (`SigningKeyPin.trustOnFirstUse`).
        public var pinnedSigningKey: String?
        public init() {}
    }

    public let directory: URL
    public let limits: Limits
    var fileURL: URL { directory.appendingPathComponent("herald-shared.json") }
    var lockURL: URL { directory.appendingPathComponent("herald-shared.lock") }

    /// Opens (and creates) the store in `directory`.
    public init(directory: URL, limits: Limits = Limits()) throws(SharedStoreError) {
        self.directory = directory
        self.limits = limits
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw .io("cannot create \(directory.path): \(error)")
        }
    }

    /// Everything, read under a shared lock.
    public func contents() throws(SharedStoreError) -> Contents {
        try withLock(LOCK_SH) { () throws(SharedStoreError) in try read() }
    }

    /// Replaces the contacts the extension names senders by (the app calls this when they change).
    public func setContacts(_ contacts: [Contact]) throws(SharedStoreError) {
        try update { $0.contacts = contacts }
    }

    /// Adds what the extension resolved; a transaction already recorded is not added twice.
    public func record(_ record: SharedRecord) throws(SharedStoreError) {
        try update { c in
            switch record {
            case .message(let m):
                guard !c.messages.contains(where: { $0.txID == m.txID }) else { return }
                c.messages.append(m)
                c.pendingFetches.removeAll { $0.txID == m.txID }
            case .pendingFetch(let p):
                guard !c.pendingFetches.contains(where: { $0.txID == p.txID }), !c.messages.contains(where: { $0.txID == p.txID })
                else { return }
                c.pendingFetches.append(p)
            }
        }
    }

    /// Takes the decrypted messages out of the store: after this, their text is gone from disk.
    public func consumeMessages() throws(SharedStoreError) -> [StoredMessage] {
        var taken: [StoredMessage] = []
        try update { c in
            taken = c.messages
            c.messages = []
        }
        return taken
    }

    /// Removes pending fetches the app has fetched.
    public func removePendingFetches(txIDs: Set<String>) throws(SharedStoreError) {
        try update { $0.pendingFetches.removeAll { txIDs.contains($0.txID) } }
    }

    /// One read-modify-write under the exclusive lock.
    public func update(_ change: (inout Contents) throws -> Void) throws(SharedStoreError) {
        try withLock(LOCK_EX) { () throws(SharedStoreError) in
            var contents = try read()
            do { try change(&contents) } catch { throw .io("update failed: \(error)") }
            if contents.messages.count > limits.maximumMessages {
                contents.messages.removeFirst(contents.messages.count - limits.maximumMessages)
            }
            if contents.pendingFetches.count > limits.maximumPendingFetches {
                contents.pendingFetches.removeFirst(contents.pendingFetches.count - limits.maximumPendingFetches)
            }
            try write(contents)
        }
    }

    func read() throws(SharedStoreError) -> Contents {
        guard let data = FileManager.default.contents(atPath: fileURL.path) else { return Contents() }
        do {
            return try JSONDecoder().decode(Contents.self, from: data)
        } catch {
            throw .corrupt("\(fileURL.lastPathComponent) does not decode: \(error)")
        }
    }

    /// Writes a temporary file, flushes it, and renames it over the store: all or nothing.
    func write(_ contents: Contents) throws(SharedStoreError) {
        let temporary = directory.appendingPathComponent(".herald-shared.\(getpid()).tmp")
        do {
            let data = try JSONEncoder().encode(contents)
            let fd = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            guard fd >= 0 else { throw SharedStoreError.io("cannot open \(temporary.path): errno \(errno)") }
            defer { close(fd) }
            let written = data.withUnsafeBytes { writeFully(fd, $0.baseAddress, $0.count) }
            guard written == data.count, fsync(fd) == 0 else { throw SharedStoreError.io("short write to \(temporary.path)") }
            guard rename(temporary.path, fileURL.path) == 0 else { throw SharedStoreError.io("rename failed: errno \(errno)") }
        } catch let error as SharedStoreError {
            throw error
        } catch {
            throw .io("encode failed: \(error)")
        }
    }

    func withLock<T>(_ operation: Int32, _ body: () throws(SharedStoreError) -> T) throws(SharedStoreError) -> T {
        let fd = open(lockURL.path, O_RDWR | O_CREAT, 0o600)
        guard fd >= 0 else { throw .io("cannot open \(lockURL.path): errno \(errno)") }
        defer { close(fd) }
        while flock(fd, operation) != 0 {
            guard errno == EINTR else { throw .io("flock failed: errno \(errno)") }
        }
        defer { _ = flock(fd, LOCK_UN) }
        return try body()
    }
}

/// Writes a buffer fully (retrying short writes and EINTR); the byte count written.
private func writeFully(_ fd: Int32, _ base: UnsafeRawPointer?, _ count: Int) -> Int {
    guard let base else { return count == 0 ? 0 : -1 }
    var done = 0
    while done < count {
        let n = write(fd, base + done, count - done)
        if n < 0 {
            if errno == EINTR { continue }
            return -1
        }
        done += n
    }
    return done
}

/// Why the shared store failed.
public enum SharedStoreError: Error, Hashable, Sendable, CustomStringConvertible {
    case io(String)
    case corrupt(String)
    public var description: String {
        switch self {
        case .io(let m): "shared store I/O: \(m)"
        case .corrupt(let m): "shared store corrupt: \(m)"
        }
    }
}
