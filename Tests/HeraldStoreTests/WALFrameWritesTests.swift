import Foundation
import GRDB
import GRDBSQLite
import HeraldStore
import Testing

/// The store's VFS writes each WAL frame in one call (`CHeraldSQLite`): what SQLite commits must
/// read back, on other connections while commits go on, after checkpoints restart the WAL, and
/// after the file is reopened.
@Suite("SQLite: each WAL frame in one write")
struct WALFrameWritesTests {
    /// Row `id`'s value: its length and bytes follow from the id, so a reader can check any row.
    static func value(_ id: Int) -> Data {
        Data(repeating: UInt8(id % 251), count: 1 + (id * 7_919) % 9_000)
    }

    @Test("commits read back whole on another connection as they happen, across WAL restarts, and after reopening")
    func framesReadBack() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-wal-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Opening a store sets up the process's VFS; every connection after it writes through it.
        _ = try SQLiteStore(path: directory.appendingPathComponent("store.sqlite").path)
        #expect(String(cString: sqlite3_vfs_find(nil).pointee.zName) == "herald")

        let path = directory.appendingPathComponent("frames.sqlite").path
        let pool = try DatabasePool(path: path)
        try await pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB NOT NULL)")
        }
        let reads = try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                var next = 0
                for transaction in 0..<300 {
                    let ids = next..<(next + 1 + transaction % 9)
                    next = ids.upperBound
                    try await pool.write { db in
                        for id in ids {
                            try db.execute(sql: "INSERT INTO t (id, v) VALUES (?, ?)", arguments: [id, Self.value(id)])
                        }
                        // Rows rewritten in place as well as appended.
                        if ids.upperBound > 10 { try db.execute(sql: "UPDATE t SET v = v WHERE id = ?", arguments: [ids.upperBound / 2]) }
                    }
                    // A restarted WAL: its header and its first frame written anew from offset 0.
                    if transaction % 60 == 59 { try await pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") } }
                }
                return -1
            }
            group.addTask {
                // Another connection reads every committed row while the commits go on.
                var passes = 0
                var seen = 0
                while seen < 1_491 {
                    let rows = try await pool.read { db in try Row.fetchAll(db, sql: "SELECT id, v FROM t ORDER BY id") }
                    #expect(rows.count >= seen)
                    for row in rows {
                        let id: Int = row["id"]
                        let v: Data = row["v"]
                        if v != Self.value(id) { Issue.record("row \(id) read back wrong") }
                    }
                    seen = rows.count
                    passes += 1
                }
                return passes
            }
            return try await group.reduce(0) { $0 + max(0, $1) }
        }
        #expect(reads > 0)
        try pool.close()

        let reopened = try DatabasePool(path: path)
        try await reopened.read { db in
            #expect(try String.fetchOne(db, sql: "PRAGMA integrity_check") == "ok")
            let rows = try Row.fetchAll(db, sql: "SELECT id, v FROM t ORDER BY id")
            #expect(rows.count == 1_491)
            #expect(rows.allSatisfy { row in (row["v"] as Data) == Self.value(row["id"]) })
        }
        try reopened.close()
    }
}
