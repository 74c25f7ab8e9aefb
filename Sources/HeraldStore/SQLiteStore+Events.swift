public import Foundation
import GRDB
import HeraldCore
import HeraldPushCore

/// SQLiteStore: events.
extension SQLiteStore {
    public func enqueue(_ events: [NewEvent], checkpoint: ChainCheckpoint?, now: Date, claim: DirectClaim?) async throws -> EnqueueResult {
        guard case .enqueued(let result) = try await writes.submit(.enqueue(Enqueue(events: events, checkpoint: checkpoint, now: now, claim: claim)))
        else { preconditionFailure("an enqueue commits as an enqueue") }
        return result
    }

    /// A write the group commit takes: a publisher's events, a lane's claim or its outcomes.
    enum GroupedWrite: Sendable {
        case enqueue(Enqueue)
        case claim(app: String, platform: Platform, limit: Int, now: Date, lease: Duration)
        case complete([DeliveryOutcome], now: Date)
        case expand(FanoutPage)
    }

    enum GroupedResult: Sendable {
        case enqueued(EnqueueResult)
        case claimed([ClaimedDelivery])
        case recorded
        case expanded(EnqueueResult?)
    }

    /// One caller's `enqueue`.
    struct Enqueue: Sendable {
        var events: [NewEvent]
        var checkpoint: ChainCheckpoint?
        var now: Date
        var claim: DirectClaim?
    }

    /// Commits the writes waiting together in one transaction: one WAL sync for all of them.
    /// If that transaction fails, each is retried alone, so one caller's bad batch fails only it.
    static func commit(_ group: [GroupedWrite], pool: DatabasePool, statements: WriterStatements) async -> [Result<GroupedResult, any Error>] {
        if group.count > 1, let all = try? writeHere(pool, statements, { db in try group.map { try Self.apply($0, db, statements) } }) {
            return all.map { .success($0) }
        }
        var results: [Result<GroupedResult, any Error>] = []
        for write in group {
            do {
                results.append(.success(try writeHere(pool, statements) { db in try Self.apply(write, db, statements) }))
            } catch {
                results.append(.failure(error))
            }
        }
        return results
    }

    /// The group commit's transaction on the committing task's own thread (`DispatchQueue.sync`
    /// runs there): the async `pool.write` would wake the writer's thread and then this task's,
    /// two hand-overs per commit, which at one event a commit cost more than the insert. Group
    /// commit keeps to one committer at a time, so this holds one thread during the WAL sync.
    /// `BEGIN IMMEDIATE` and `COMMIT` are statements prepared once: GRDB's `write` compiles both
    /// for every transaction (a tenth of the commit's own CPU at one event a commit).
    static func writeHere<T>(_ pool: DatabasePool, _ statements: WriterStatements, _ body: (Database) throws -> T) throws -> T {
        try pool.writeWithoutTransaction { db in
            try statements.statement("BEGIN IMMEDIATE TRANSACTION", db).execute()
            do {
                let result = try body(db)
                try statements.statement("COMMIT TRANSACTION", db).execute()
                return result
            } catch {
                if db.isInsideTransaction { try? db.execute(sql: "ROLLBACK TRANSACTION") }
                throw error
            }
        }
    }

    static func apply(_ write: GroupedWrite, _ db: Database, _ statements: WriterStatements) throws -> GroupedResult {
        switch write {
        case .enqueue(let request):
            return .enqueued(try insert(request, db, statements))
        case .claim(let app, let platform, let limit, let now, let lease):
            return .claimed(try claim(app: app, platform: platform, limit: limit, now: now, lease: lease, db, statements))
        case .complete(let outcomes, let now):
            try record(outcomes, now: now, db, statements)
            return .recorded
        case .expand(let page):
            return .expanded(try expand(page, db, statements))
        }
    }

    static func insert(_ request: Enqueue, _ db: Database, _ statements: WriterStatements) throws -> EnqueueResult {
        let (events, checkpoint, now) = (request.events, request.checkpoint, request.now)
        var created: [String: Int] = [:]
        let ms = now.milliseconds
        var writer = try DeliveryWriter(db, now: ms, claim: request.claim, statements: statements)
        // Each app once per transaction, not once per event.
        let addApp = try statements.statement("INSERT INTO apps (id, created_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING", db)
        for app in Set(events.map(\.app)) { try addApp.execute(arguments: [app, ms]) }
        let insertEvent = try statements.statement(
            """
            INSERT INTO events (id, app_id, template, push_type, priority, collapse_id, payload, created_at, expires_at, dedupe_key, fcm_data, request_id,
              coalesce_key, coalesce_ms, fanout)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, db)
        // The insert runs once per event: its values are bound directly.
        let eventValues = SQLiteParameters(insertEvent)
        for event in events {
            // An event whose dedupe key is held is skipped.
            if let key = event.dedupeKey, try !SQLiteDedupeKeys.claim(key, db, statements) { continue }
            try eventValues.text(1, event.id)
            try eventValues.text(2, event.app)
            try eventValues.text(3, event.template)
            try eventValues.text(4, event.push.pushType.rawValue)
            try eventValues.integer(5, Int64(event.push.priority.rawValue))
            try eventValues.text(6, event.push.collapseID)
            try eventValues.blob(7, event.push.payload)
            try eventValues.integer(8, ms)
            try eventValues.integer(9, event.expiresAt.milliseconds)
            try eventValues.text(10, event.dedupeKey)
            try eventValues.text(11, event.push.fcmDataJSON)
            try eventValues.text(12, event.requestID)
            try eventValues.text(13, event.coalescing?.key)
            try eventValues.integer(14, event.coalescing?.window)
            try eventValues.integer(15, event.fanout == nil ? 0 : 1)
            try eventValues.execute()
            if let route = event.fanout {
                let stored = route.storedColumns
                try db.execute(
                    sql: """
                        INSERT INTO fanouts (event_id, app_id, keys, excluded, kasia, key_index, cursor_row, expanded, created_at)
                        VALUES (?, ?, ?, ?, ?, 0, 0, 0, ?)
                        """,
                    arguments: [event.id, event.app, stored.keys, stored.excluded, stored.kasia, ms])
                created[event.id] = 0
                continue
            }
            created[event.id] = try writer.add(event, acceptedAt: ms, db)
        }
        try writer.finish(db)
        if let checkpoint {
            try db.execute(
                sql: """
                    INSERT INTO chain_checkpoints (source, block_hash, daa_score, updated_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (source) DO UPDATE SET block_hash = excluded.block_hash,
                      daa_score = excluded.daa_score, updated_at = excluded.updated_at
                    """,
                arguments: [checkpoint.source, checkpoint.blockHash, Int64(bitPattern: checkpoint.daaScore), ms])
        }
        return EnqueueResult(created: created, claimed: writer.claimed, pending: writer.pending)
    }

    /// Writes deliveries within one transaction (an enqueue's, a fan-out page's): leased to the
    /// lanes a `DirectClaim` names, up to each one's count, pending for the others.
    struct DeliveryWriter {
        var claimed: [ClaimedDelivery] = []
        var pending = Set<LaneKey>()
        private var created = 0
        /// Pending deliveries a coalescing event replaced.
        private var coalesced = 0
        private var budget: [LaneKey: Int]
        private let ms: Int64
        private let leaseUntil: Int64
        private let insertDelivery: Statement
        private let deviceByRow: Statement
        private let values: SQLiteParameters
        private let statements: WriterStatements

        init(_ db: Database, now ms: Int64, claim: DirectClaim?, statements: WriterStatements) throws {
            self.statements = statements
            self.ms = ms
            budget = claim?.lanes ?? [:]
            leaseUntil = ms + Int64((claim?.lease ?? .zero).seconds * 1000)
            insertDelivery = try statements.statement(
                """
                INSERT INTO deliveries (event_id, device_row, app_id, state, attempts, next_attempt_at, lease_until, apns_id, expires_at, created_at, updated_at, platform)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, db)
            deviceByRow = try statements.statement("SELECT * FROM devices WHERE id = ?", db)
            // Runs once per delivery: its values are bound directly.
            values = SQLiteParameters(insertDelivery)
        }

        /// `event`'s deliveries to its devices, one per device row; returns how many were made.
        /// `acceptedAt`: when the event was (for the delivery-latency metric).
        /// `fanout`: the deliveries are a fan-out job's page.
        mutating func add(_ event: NewEvent, acceptedAt: Int64, fanout: Bool = false, _ db: Database) throws -> Int {
            let apnsIDs = DeliveryIDSequence()
            let expiresAt = event.expiresAt.milliseconds
            let rows = Set(event.deviceRowIDs).sorted()
            let routed = event.devices.count == rows.count ? event.devices : []
            var added = 0
            for (i, row) in rows.enumerated() {
                // A device gone since routing: its insert fails on the foreign key, and it is skipped.
                let device = i < routed.count && routed[i].rowID == row
                    ? routed[i] : try Row.fetchOne(deviceByRow, arguments: [row]).map(SQLiteStore.deviceRecord)
                let lane = device.map { LaneKey(app: event.app, platform: $0.platform) }
                let apnsID = apnsIDs.uuid(for: row)
                let slot = try event.coalescing.map { try place(row, $0, db) }
                let due = slot?.due ?? ms
                // Only a delivery due now is leased straight away; a coalesced one waits for its slot.
                let leased = due <= ms && device != nil && lane.flatMap { budget[$0] }.map { $0 > 0 } == true
                guard try insert(
                    event, row: row, state: leased ? .sending : .pending, attempts: leased ? 1 : 0, leaseUntil: leased ? leaseUntil : nil,
                    apnsID: apnsID.lowercased, expiresAt: expiresAt, platform: lane?.platform.rawValue, due: due)
                else { continue }
                added += 1
                if let slot, let coalescing = event.coalescing {
                    try claimSlot(row, coalescing, next: slot.nextSlot, pending: db.lastInsertedRowID, db)
                }
                if leased, let device, let lane {
                    budget[lane, default: 0] -= 1
                    var delivery = ClaimedDelivery(
                        id: db.lastInsertedRowID, eventID: event.id, device: device, push: event.push, apnsID: apnsID.uuid, attempt: 1,
                        expiresAt: Date(milliseconds: expiresAt), acceptedAt: Date(milliseconds: acceptedAt), requestID: event.requestID,
                        template: event.template)
                    delivery.fanout = fanout
                    claimed.append(delivery)
                } else if let lane {
                    pending.insert(lane)
                }
            }
            created += added
            return added
        }

        /// Where `row`'s coalescing delivery goes: it replaces the device's delivery for the key
        /// still pending (dropped, `coalesced`) and takes its time, or waits for the slot.
        private mutating func place(_ row: Int64, _ coalescing: Coalescing, _ db: Database) throws -> (due: Int64, nextSlot: Int64) {
            let slot = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT next_slot, pending FROM coalescing_slots WHERE device_row = ? AND key = ?"),
                arguments: [row, coalescing.key])
            var replacedDue: Int64?
            if let pending = slot?[1] as Int64? {
                replacedDue = try Int64.fetchOne(
                    db.cachedStatement(sql: """
                        UPDATE deliveries SET state = 'dropped', last_reason = ?, updated_at = ? WHERE id = ? AND state = 'pending'
                        RETURNING next_attempt_at
                        """), arguments: [Coalescing.droppedReason, ms, pending])
                if replacedDue != nil { coalesced += 1 }
            }
            return coalescing.place(now: ms, nextSlot: slot?[0] as Int64?, replacedDue: replacedDue)
        }

        /// The device's slot for the key moves to `next`, and `pending` is its delivery waiting.
        private func claimSlot(_ row: Int64, _ coalescing: Coalescing, next: Int64, pending: Int64, _ db: Database) throws {
            try db.cachedStatement(sql: """
                INSERT INTO coalescing_slots (device_row, key, next_slot, pending) VALUES (?, ?, ?, ?)
                ON CONFLICT (device_row, key) DO UPDATE SET next_slot = excluded.next_slot, pending = excluded.pending
                """).execute(arguments: [row, coalescing.key, next, pending])
        }

        private func insert(
            _ event: NewEvent, row: Int64, state: DeliveryState, attempts: Int64, leaseUntil: Int64?, apnsID: String,
            expiresAt: Int64, platform: String?, due: Int64
        ) throws -> Bool {
            try values.text(1, event.id)
            try values.integer(2, row)
            try values.text(3, event.app)
            try values.text(4, state.rawValue)
            try values.integer(5, attempts)
            try values.integer(6, due)
            try values.integer(7, leaseUntil)
            try values.text(8, apnsID)
            try values.integer(9, expiresAt)
            try values.integer(10, ms)
            try values.integer(11, ms)
            try values.text(12, platform)
            // A device removed since routing (its token died, it unregistered) fails the foreign
            // key: that statement alone is undone, and the event goes to the others.
            do {
                try values.execute()
            } catch where error.code == ResultCode.SQLITE_CONSTRAINT_FOREIGNKEY.rawValue {
                return false
            }
            return true
        }

        /// Counts what was written, in the same transaction.
        func finish(_ db: Database) throws {
            var counts = DeliveryCounts()
            counts.add(.sending, nil, claimed.count)
            counts.add(.pending, nil, created - claimed.count)
            counts.move(from: (.pending, nil), to: (.dropped, Coalescing.droppedReason), count: coalesced)
            try counts.apply(db, statements)
        }
    }

    public func checkpoint(source: String) async throws -> ChainCheckpoint? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM chain_checkpoints WHERE source = ?", arguments: [source]).map {
                ChainCheckpoint(source: $0["source"], blockHash: $0["block_hash"], daaScore: UInt64(bitPattern: $0["daa_score"]))
            }
        }
    }

    public func anchors(source: String) async throws -> [ChainAnchor] {
        try await pool.read { db in
            try Row.fetchAll(
                db, sql: "SELECT block_hash, daa_score, block_time FROM chain_anchors WHERE source = ? ORDER BY block_time DESC",
                arguments: [source]
            ).map {
                ChainAnchor(source: source, blockHash: $0[0], daaScore: UInt64(bitPattern: $0[1]), time: Date(milliseconds: $0[2]))
            }
        }
    }

    public func addAnchor(_ anchor: ChainAnchor, keepingAfter: Date) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO chain_anchors (source, block_hash, daa_score, block_time) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                arguments: [anchor.source, anchor.blockHash, Int64(bitPattern: anchor.daaScore), anchor.time.milliseconds])
            try db.execute(
                sql: "DELETE FROM chain_anchors WHERE source = ? AND block_time < ?", arguments: [anchor.source, keepingAfter.milliseconds])
        }
    }
}
