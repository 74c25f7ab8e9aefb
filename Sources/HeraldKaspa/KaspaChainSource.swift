public import Foundation
import HeraldCore
public import HeraldPushCore
public import HeraldStore
import KasiaProtocol
public import Logging
public import ServiceLifecycle
import Synchronization

/// What `/v1/stats` and `/metrics` show of the source.
public struct KaspaSourceStats: Sendable, Hashable {
    /// This instance holds the source's lock (one instance follows the chain at a time).
    public var leader = false
    public var connected = false
    public var lastBlockHash: String?
    public var lastDaaScore: UInt64?
    /// How far behind the chain the source is: now less the time of the last block it processed.
    /// It keeps growing while the node is away, so an alert on it fires. Nil before the first block.
    public var lagSeconds: Double?
    /// The time of the last block processed (Unix seconds).
    var lastBlockTime: Double?
    public var transactionsSeen = 0
    public var transactionsClassified = 0
    public var eventsCommitted = 0
    /// Kasia messages whose sender (the owner of input 0's coin) nobody could name: not pushed.
    public var unattributedMessages = 0
    /// Times the node was asked (`getVirtualChainFromBlockV2`) for the coin a Kasia message
    /// spends, so its push can carry the sender's proof.
    public var coinLookups = 0
    /// Until when the node is not asked for coins (it refused in a row, or the connection failed while asking).
    var coinLookupsPausedUntil: Date?
    /// Lookups the node refused (or answered unreadably) in a row.
    var coinLookupRefusals = 0
    /// Times the node did not know the checkpoint, so a stretch of the chain may have been skipped.
    public var gaps = 0
    /// Blocks the node failed to give however often asked: their messages were not pushed.
    public var skippedBlocks = 0
    /// The time of the newest anchor kept (block time).
    var lastAnchorTime: Double?
    public var reconnects = 0
    /// Gap fills that failed in a row from one checkpoint the node has.
    var gapFillFailures: GapFillFailures?

    struct GapFillFailures: Sendable, Hashable {
        var hash: String
        var count: Int
    }

    /// What `/v1/stats` shows of the source.
    public var statsFields: [String: JSONValue] {
        [
            "connected": .bool(connected), "last_block": lastBlockHash.map(JSONValue.string) ?? .null,
            "last_daa_score": lastDaaScore.map(JSONValue.unsigned) ?? .null,
            "lag_seconds": lagSeconds.map(JSONValue.double) ?? .null,
            "transactions_seen": .int(Int64(transactionsSeen)),
            "transactions_classified": .int(Int64(transactionsClassified)),
            "events_committed": .int(Int64(eventsCommitted)),
            "unattributed_messages": .int(Int64(unattributedMessages)), "gaps": .int(Int64(gaps)),
            "skipped_blocks": .int(Int64(skippedBlocks)), "coin_lookups": .int(Int64(coinLookups)),
            "reconnects": .int(Int64(reconnects)), "leader": .bool(leader),
        ]
    }

    /// What `/readyz` shows of the source.
    public var readinessFields: [String: JSONValue] {
        ["connected": .bool(connected), "leader": .bool(leader), "lag_seconds": lagSeconds.map(JSONValue.double) ?? .null]
    }
}

/// Reads Kasia messages off a Kaspa node: subscribes to BlockAdded and
/// VirtualChainChanged, turns accepted Kasia transactions into events, commits them with the
/// chain checkpoint, and after a restart or a reconnect fills the gap from the checkpoint.
public final class KaspaChainSource: Service, Sendable {
    public struct Configuration: Sendable {
        public var url: String
        /// Messages older than this are not pushed (default 24 h).
        public var maximumAge: Duration = .seconds(24 * 3600)
        /// A chain block passed is kept as an anchor, to resume from should the node forget the
        /// checkpoint, at most this often in block time; anchors older than the maximum age go.
        public var anchorInterval: Duration = .seconds(300)
        /// How often a block the node fails to give is asked for again, in place, before it is
        /// skipped (its messages not pushed); the waits double from `blockRetryDelay`.
        public var blockAttempts = 4
        public var blockRetryDelay: Duration = .milliseconds(200)
        /// The checkpoint's name in the store.
        public var checkpointName = "kaspa"
        /// Blocks remembered for acceptance (about 16 minutes at 10 blocks/s).
        public var rememberedBlocks = 10_000
        public var reconnectDelay: Duration = .milliseconds(100)
        public var maximumReconnectDelay: Duration = .seconds(5)
        /// How often an instance that does not follow the chain checks whether the follower died.
        public var leadershipPoll: Duration = .seconds(2)
        /// The network the node must be on (`mainnet`, `testnet` for any testnet, `testnet-10`, …), checked against its
        /// `getServerInfo` before anything is read; nil follows whatever the node serves.
        public var network: String?
        /// How long the node is not asked for a coin (`getVirtualChainFromBlockV2`) after it refused
        /// `coinLookupRefusals` times in a row, or the connection failed while asking: a node
        /// without the call costs that many requests per pause. One refusal (a selected parent
        /// just reorged out) does not pause.
        public var coinLookupPause: Duration = .seconds(600)
        public var coinLookupRefusals = 3

        public init(url: String) {
            self.url = url
        }
    }

    public let configuration: Configuration
    let store: any ChainCheckpoints & Leadership
    let sink: any KasiaEventSink
    let logger: Logger
    let classifier = KasiaClassifier()
    let now: @Sendable () -> Date
    private let state = Mutex(KaspaSourceStats())

    public init(
        configuration: Configuration, store: any ChainCheckpoints & Leadership, sink: any KasiaEventSink, logger: Logger = Logger(label: "herald.kaspa"),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.store = store
        self.sink = sink
        self.logger = logger
        self.now = now
    }

    public var stats: KaspaSourceStats {
        var stats = state.withLock { $0 }
        stats.lagSeconds = stats.lastBlockTime.map { max(0, now().timeIntervalSince1970 - $0) }
        return stats
    }

    /// A service: follows the chain until a graceful shutdown or cancellation.
    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.runWhileLeader() }
    }

    /// Runs until cancelled. With several instances on one database, waits until this one holds
    /// the source's lock (another takes over within `configuration.leadershipPoll` when the holder dies), then
    /// follows the chain from the shared checkpoint.
    public func runWhileLeader() async {
        do {
            try await store.withLeadership("kaspa-chain-source:" + configuration.checkpointName, poll: configuration.leadershipPoll) {
                self.state.withLock { $0.leader = true }
                self.logger.info("This instance follows the Kaspa chain")
                await self.follow()
            }
        } catch {
            if !Task.isCancelled { logger.error("Kaspa chain source stopped", metadata: ["error": "\(error)"]) }
        }
        state.withLock { $0.leader = false }
    }

    /// Connect, fill the gap, follow the chain; reconnect with back-off; until cancelled.
    func follow() async {
        var delay = configuration.reconnectDelay
        let memory = ChainMemory(capacity: configuration.rememberedBlocks)
        while !Task.isCancelled {
            do {
                try await KaspaRPCClient(url: configuration.url, logger: logger).withSession { session in
                    try await self.follow(session, memory: memory)
                }
                delay = configuration.reconnectDelay
            } catch is CancellationError {
                break
            } catch {
                if Task.isCancelled { break }
                logger.warning("Kaspa node connection lost; reconnecting", metadata: ["error": "\(error)", "delay": "\(delay)"])
            }
            state.withLock {
                $0.connected = false
                $0.reconnects += 1
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, configuration.maximumReconnectDelay)
        }
        state.withLock { $0.connected = false }
    }

    private func follow(_ session: KaspaRPCSession, memory: ChainMemory) async throws {
        if let network = configuration.network {
            // A node of another network would push other people's money and messages as ours.
            let served = try await session.getServerInfo().networkId
            // `testnet` accepts any numbered testnet (`testnet-10`, `testnet-11`).
            guard served == network || (network == "testnet" && served?.hasPrefix("testnet-") == true) else {
                logger.error("the Kaspa node serves another network: not following it", metadata: [
                    "expected": "\(network)", "node": "\(served ?? "unknown")",
                ])
                throw KaspaRPCError.node(method: "getServerInfo", message: "network \(served ?? "unknown"), expected \(network)")
            }
        }
        try await session.subscribeChain()
        state.withLock { $0.connected = true }
        logger.info("Following the Kaspa node", metadata: ["url": "\(configuration.url)"])
        // Gap-fill from the checkpoint; notifications that arrive meanwhile wait in the stream
        // (a txid seen twice is committed once).
        if let checkpoint = try await store.checkpoint(source: configuration.checkpointName) {
            var missed: VirtualChainChanged?
            do {
                missed = try await session.getVirtualChainFromBlock(startHash: checkpoint.blockHash)
                state.withLock { $0.gapFillFailures = nil }
            } catch KaspaRPCError.node(_, let message) {
                // A node error may pass (a busy node) or last (the checkpoint pruned, or reorged out
                // of the chain). The node says which: it still has the block as a chain block, or
                // not. A passing one is tried again after a reconnect, with its back-off — a few
                // times, then counted as lost, so a node that lies cannot hold the source for ever.
                if try await isChainBlock(checkpoint.blockHash, session: session) {
                    let failures = state.withLock { s -> Int in
                        let count = s.gapFillFailures?.hash == checkpoint.blockHash ? s.gapFillFailures!.count + 1 : 1
                        s.gapFillFailures = .init(hash: checkpoint.blockHash, count: count)
                        return count
                    }
                    if failures <= Self.gapFillAttempts {
                        logger.warning("the node failed the gap fill from a block it has: trying again after a reconnect", metadata: [
                            "checkpoint": "\(checkpoint.blockHash)", "node": "\(message)", "attempt": "\(failures)",
                        ])
                        throw KaspaRPCError.node(method: "getVirtualChainFromBlock", message: message)
                    }
                }
                state.withLock { $0.gapFillFailures = nil }
                // The node no longer knows the checkpoint (pruned, or reorged out of the chain):
                // asking again would fail forever. Resume where the maximum age begins, and say what was skipped.
                state.withLock { $0.gaps += 1 }
                let start = try await recoveryStart(session: session)
                logger.error(
                    "the node does not know the checkpoint: resuming from the newest anchor it has, else its pruning point; messages between may not be pushed",
                    metadata: [
                        "checkpoint": "\(checkpoint.blockHash)", "daa_score": "\(checkpoint.daaScore)", "node": "\(message)",
                        "resume_from": "\(start ?? "the node's sink")",
                    ])
                if let start {
                    do {
                        missed = try await session.getVirtualChainFromBlock(startHash: start)
                    } catch KaspaRPCError.node(_, let message) {
                        logger.error("the node refused its own chain block: following from now on", metadata: ["node": "\(message)"])
                    }
                }
            }
            if let missed { try await catchUp(missed, session: session, memory: memory) }
        }
        for await notification in session.notifications {
            switch notification {
            case .blockAdded(let block):
                memory.remember(block)
                state.withLock { $0.transactionsSeen += block.transactions.count }
            case .virtualChainChanged(let change):
                try await process(change, session: session, memory: memory, live: true)
            }
        }
        throw KaspaRPCError.disconnected
    }

    /// Processes `first` and the rest of the chain up to the node's sink: the node answers
    /// `getVirtualChainFromBlock` a batch at a time (about ten merge-set limits of blocks), so
    /// the source asks again from the last block it got until nothing is added.
    private func catchUp(_ first: VirtualChainChanged, session: KaspaRPCSession, memory: ChainMemory) async throws {
        var batch = first
        var asked: String?
        // A node that answers with the block it was asked from has nothing newer (or is lying): stop.
        while let last = batch.addedChainBlockHashes.last, last != asked, !Task.isCancelled {
            try await process(batch, session: session, memory: memory)
            asked = last
            batch = try await session.getVirtualChainFromBlock(startHash: last)
        }
    }

    /// How often a gap fill from a block the node has may fail before the checkpoint counts as lost.
    static let gapFillAttempts = 3

    /// Whether the node has `hash` as a block of its selected chain. A node error says it has
    /// not; a lost connection or a timeout is thrown (the source reconnects).
    private func isChainBlock(_ hash: String, session: KaspaRPCSession) async throws -> Bool {
        do {
            return try await session.getBlock(hash: hash, includeTransactions: false).verboseData?.isChainBlock ?? false
        } catch KaspaRPCError.node {
            return false
        }
    }

    /// Where to resume when the node no longer knows the checkpoint, in at most one request per
    /// anchor and one more: the newest anchor within the maximum age that the node has as a chain
    /// block (nearest the checkpoint, so the least is read again: events already committed are not
    /// committed twice); else the node's pruning point, its oldest chain block (what is older than
    /// the maximum age is skipped by age, as always); else its sink.
    private func recoveryStart(session: KaspaRPCSession) async throws -> String? {
        let cutoff = now().addingTimeInterval(-Double(configuration.maximumAge.components.seconds))
        for anchor in try await store.anchors(source: configuration.checkpointName) where anchor.time >= cutoff {
            if try await isChainBlock(anchor.blockHash, session: session) { return anchor.blockHash }
        }
        let dag = try await session.getBlockDagInfo()
        return dag.pruningPointHash ?? dag.sink
    }

    /// Turns one chain change into events and commits them with the new checkpoint.
    /// - Parameter live: the change came as a notification (not from a gap fill): the node may be
    ///   asked for coins nobody remembered, as the path from there to its sink is short.
    func process(_ change: VirtualChainChanged, session: KaspaRPCSession, memory: ChainMemory, live: Bool = false) async throws {
        guard let last = change.addedChainBlockHashes.last else { return }
        let oldest = now().addingTimeInterval(-Double(configuration.maximumAge.components.seconds))
        var events: [KasiaEvent] = []
        var classified = 0
        var unattributed = 0
        for acceptance in change.acceptedTransactionIds {
            guard let accepting = try await block(acceptance.acceptingBlockHash, session: session, memory: memory) else { continue }
            // Nothing a chain block older than the maximum age accepted is pushed: its merge set is not read.
            guard Date(timeIntervalSince1970: Double(accepting.header.timestamp) / 1000) >= oldest else { continue }
            // Every block the chain block merged must be known to tell Kasia from the rest.
            for hash in accepting.verboseData.map({ ($0.mergeSetBluesHashes ?? []) + ($0.mergeSetRedsHashes ?? []) }) ?? [] {
                _ = try await block(hash, session: session, memory: memory)
            }
            // Kasia transactions whose spent coin nobody remembered (a wallet's first message).
            var unknownCoins: [(txid: String, transaction: RpcTransaction, time: Int64)] = []
            for txid in Set(acceptance.acceptedTransactionIds) {
                guard let transaction = memory.kasiaTransaction(txid) else { continue }
                let time = Int64((transaction.verboseData?.blockTime ?? accepting.header.timestamp) / 1000)
                guard Date(timeIntervalSince1970: Double(time)) >= oldest else { continue }
                let result = classifier.classify(
                    transaction, timestamp: time, daaScore: accepting.header.daaScore, spentOutput: memory.output)
                switch result {
                case .event(let event):
                    events.append(event)
                    classified += 1
                case .needsSender:
                    unknownCoins.append((txid, transaction, time))
                case .notKasia, .ignored:
                    break
                }
            }
            guard !unknownCoins.isEmpty else { continue }
            // The node's coins name the sender and fill the proof; without them, its return address names the sender.
            let coins = live
                ? try await spentCoins(of: Set(unknownCoins.map(\.txid)), acceptedBy: accepting, newest: change.addedChainBlockHashes.last, session: session, memory: memory)
                : [:]
            for (txid, transaction, time) in unknownCoins {
                var result = classifier.classify(
                    transaction, timestamp: time, daaScore: accepting.header.daaScore, spentOutput: { coins[$0] ?? memory.output($0) })
                if case .needsSender = result {
                    guard let sender = try await returnAddress(txid: txid, daaScore: accepting.header.daaScore, session: session) else {
                        // Neither the outpoint map nor the node knows input 0's owner: the message
                        // is pushed as nobody's rather than as someone's it may not be.
                        unattributed += 1
                        continue
                    }
                    result = classifier.classify(
                        transaction, timestamp: time, daaScore: accepting.header.daaScore, sender: sender, spentOutput: memory.output)
                }
                if case .event(let event) = result {
                    events.append(event)
                    classified += 1
                }
            }
        }
        let lastBlock = try await block(last, session: session, memory: memory)
        let daaScore = lastBlock?.header.daaScore ?? state.withLock { $0.lastDaaScore } ?? 0
        let checkpoint = ChainCheckpoint(source: configuration.checkpointName, blockHash: last, daaScore: daaScore)
        _ = try await sink.commit(events, checkpoint: checkpoint)
        let blockTime = lastBlock.map { Double($0.header.timestamp) / 1000 }
        let anchorDue = state.withLock { s -> Bool in
            s.lastBlockHash = last
            s.lastDaaScore = daaScore
            if let blockTime { s.lastBlockTime = blockTime }
            s.transactionsClassified += classified
            s.unattributedMessages += unattributed
            s.eventsCommitted += events.count
            guard let blockTime, s.lastAnchorTime.map({ blockTime - $0 >= Double(configuration.anchorInterval.components.seconds) }) ?? true
            else { return false }
            s.lastAnchorTime = blockTime
            return true
        }
        if anchorDue, let blockTime {
            let anchor = ChainAnchor(
                source: configuration.checkpointName, blockHash: last, daaScore: daaScore, time: Date(timeIntervalSince1970: blockTime))
            do {
                try await store.addAnchor(anchor, keepingAfter: oldest)
            } catch {
                // Only a later recovery is the worse for it; the next one is tried in an interval.
                logger.warning("could not keep a chain anchor", metadata: ["error": "\(error)"])
            }
        }
    }

    /// The coins `transactions` spend, asked of the node (`getVirtualChainFromBlockV2` from the
    /// accepting block's selected parent): empty when the node is behind a pause, the reader is
    /// behind the node (the answer would carry everything accepted since), or the node refuses.
    /// The answer stops at the accepting block as far as the node allows (`minConfirmationCount`
    /// from the newest chain block the change added). Refusals or answers that do not read, a few
    /// in a row, or one lost connection or timeout pause the asking (`coinLookupPause`); the last
    /// two still throw.
    private func spentCoins(
        of transactions: Set<String>, acceptedBy accepting: RpcBlock, newest: String?, session: KaspaRPCSession, memory: ChainMemory
    ) async throws -> [RpcOutpoint: RpcUtxoEntry] {
        guard let parent = accepting.verboseData?.selectedParentHash, session.backlogBytes <= Self.coinLookupBacklog else { return [:] }
        let asking = state.withLock { s -> Bool in
            guard s.coinLookupsPausedUntil.map({ now() >= $0 }) ?? true else { return false }
            s.coinLookupsPausedUntil = nil
            s.coinLookups += 1
            return true
        }
        guard asking else { return [:] }
        // The node keeps a head block only when its distance from the sink exceeds the count: the
        // accepting block is kept, and of those after it only what the node added since the change.
        var confirmations: UInt64?
        if let newest, let head = memory.block(newest)?.header.blueScore, let own = accepting.header.blueScore, head > own + 1 {
            confirmations = head - own - 1
        }
        func failed(_ reason: String, pausing: Bool) {
            let paused = state.withLock { s -> Bool in
                s.coinLookupRefusals += 1
                guard pausing || s.coinLookupRefusals >= configuration.coinLookupRefusals else { return false }
                s.coinLookupRefusals = 0
                s.coinLookupsPausedUntil = now().addingTimeInterval(Double(configuration.coinLookupPause.components.seconds))
                return true
            }
            guard paused else {
                logger.info("the node did not give the coins a Kasia message spends", metadata: ["node": "\(reason)"])
                return
            }
            logger.notice("the node did not give the coins Kasia messages spend: their senders' proofs are left out for a while", metadata: [
                "node": "\(reason)", "pause_seconds": "\(configuration.coinLookupPause.components.seconds)",
            ])
        }
        do {
            let coins = try await session.spentCoins(acceptedAfter: parent, minConfirmationCount: confirmations, transactions: transactions)
            state.withLock { $0.coinLookupRefusals = 0 }
            return coins
        } catch KaspaRPCError.node(_, let message) {
            failed(message, pausing: false)
            return [:]
        } catch KaspaRPCError.invalidResponse(_, let detail) {
            failed(detail, pausing: false)
            return [:]
        } catch {
            failed("\(error)", pausing: true)
            throw error
        }
    }

    /// How far behind the node (in notification bytes waiting) the source may be and still ask it
    /// for coins: an answer carries everything the chain accepted from the accepting block on.
    static let coinLookupBacklog = 1 << 20

    /// The owner of input 0's coin, by the node's `getUtxoReturnAddress`; nil when the node does
    /// not know it (an error answer, or something that is not a Kaspa address). A lost connection
    /// still throws, so the source reconnects and fills the gap.
    private func returnAddress(txid: String, daaScore: UInt64, session: KaspaRPCSession) async throws -> String? {
        do {
            let address = try await session.getUtxoReturnAddress(txid: txid, acceptingBlockDaaScore: daaScore)
            guard let parsed = try? KaspaAddress(address) else {
                logger.warning("the node's return address is not a Kaspa address", metadata: ["txid": "\(txid)"])
                return nil
            }
            return parsed.string
        } catch KaspaRPCError.node(_, let message) {
            logger.notice("no known sender for a Kasia message: not pushed", metadata: ["txid": "\(txid)", "node": "\(message)"])
            return nil
        } catch KaspaRPCError.invalidResponse(_, let detail) {
            logger.notice("no known sender for a Kasia message: not pushed", metadata: ["txid": "\(txid)", "node": "\(detail)"])
            return nil
        }
    }

    /// A block from memory, or from the node (then remembered). A node error is asked again in
    /// place, with back-off, `configuration.blockAttempts` times in all; then the block is skipped
    /// (nil, counted): one block the node cannot give must not hold the source for ever. A lost
    /// connection still throws (the source reconnects and fills the gap).
    private func block(_ hash: String, session: KaspaRPCSession, memory: ChainMemory) async throws -> RpcBlock? {
        if let known = memory.block(hash) { return known }
        var delay = configuration.blockRetryDelay
        for attempt in 1...max(1, configuration.blockAttempts) {
            do {
                let fetched = try await session.getBlock(hash: hash, includeTransactions: true)
                memory.remember(fetched)
                state.withLock { $0.transactionsSeen += fetched.transactions.count }
                return fetched
            } catch KaspaRPCError.node(_, let message) {
                guard attempt < configuration.blockAttempts else {
                    logger.error("the node did not give a block however often asked: skipped, its messages are not pushed", metadata: [
                        "block": "\(hash)", "node": "\(message)", "attempts": "\(attempt)",
                    ])
                    break
                }
                try await Task.sleep(for: delay)
                delay *= 2
            }
        }
        state.withLock { $0.skippedBlocks += 1 }
        return nil
    }
}

/// Recent blocks (headers and merge sets, without their transactions), the Kasia transactions
/// in them, and their outputs (the outpoint map for senders and their proofs).
final class ChainMemory: Sendable {
    private struct State {
        var blocks: [String: RpcBlock] = [:]
        var order: [String] = []
        var kasia: [String: RpcTransaction] = [:]
        var kasiaByBlock: [String: [String]] = [:]
        var outpoints: [RpcOutpoint: RpcUtxoEntry] = [:]
        var costs: [String: Int] = [:]
        var bytes = 0
    }
    private let state = Mutex(State())
    let capacity: Int
    /// What the remembered blocks and transactions may take, roughly: whatever the node sends,
    /// memory stays under it.
    let maximumBytes: Int

    init(capacity: Int, maximumBytes: Int = 128 << 20) {
        self.capacity = capacity
        self.maximumBytes = maximumBytes
    }

    /// Blocks remembered, and their rough cost in bytes (for tests and stats).
    var footprint: (blocks: Int, bytes: Int) { state.withLock { ($0.order.count, $0.bytes) } }

    func remember(_ block: RpcBlock) {
        // Only what processing reads is kept: the header and the merge set, not the block's
        // transaction ids (a node may send any number).
        var slim = block
        slim.transactions = []
        slim.verboseData?.transactionIds = nil
        var kasiaIDs: [String] = []
        var kasiaTransactions: [(String, RpcTransaction)] = []
        for transaction in block.transactions where transaction.isKasia {
            guard let id = transaction.id else { continue }
            kasiaIDs.append(id)
            kasiaTransactions.append((id, transaction))
        }
        let cost = Self.cost(of: slim) + kasiaTransactions.reduce(0) { $0 + Self.cost(of: $1.1) }
        state.withLock { s in
            guard s.blocks[block.header.hash] == nil else { return }
            s.blocks[block.header.hash] = slim
            s.order.append(block.header.hash)
            s.costs[block.header.hash] = cost
            s.bytes += cost
            s.kasiaByBlock[block.header.hash] = kasiaIDs
            for (id, transaction) in kasiaTransactions {
                s.kasia[id] = transaction
                // Kasia senders usually spend their previous Kasia transaction's change.
                for (index, output) in transaction.outputs.enumerated() {
                    s.outpoints[RpcOutpoint(transactionId: id, index: UInt32(index))] = output.utxoEntry
                }
            }
            // The oldest blocks go first, past the block count or the byte budget (the newest stays).
            var evicted = 0
            while s.order.count - evicted > 1, s.order.count - evicted > capacity || s.bytes > maximumBytes {
                let hash = s.order[evicted]
                evicted += 1
                s.blocks[hash] = nil
                s.bytes -= s.costs.removeValue(forKey: hash) ?? 0
                for id in s.kasiaByBlock.removeValue(forKey: hash) ?? [] {
                    if let transaction = s.kasia.removeValue(forKey: id) {
                        for index in transaction.outputs.indices { s.outpoints[RpcOutpoint(transactionId: id, index: UInt32(index))] = nil }
                    }
                }
            }
            s.order.removeFirst(evicted)
        }
    }

    /// Roughly what a block kept in memory costs, in bytes: its hashes.
    static func cost(of block: RpcBlock) -> Int {
        256 + 72 * ((block.verboseData?.mergeSetBluesHashes?.count ?? 0) + (block.verboseData?.mergeSetRedsHashes?.count ?? 0))
    }

    /// Roughly what a Kasia transaction kept in memory costs: its payload, inputs and outputs.
    static func cost(of transaction: RpcTransaction) -> Int {
        256 + transaction.payload.utf8.count + 160 * (transaction.inputs.count + transaction.outputs.count)
    }

    func block(_ hash: String) -> RpcBlock? { state.withLock { $0.blocks[hash] } }
    func kasiaTransaction(_ id: String) -> RpcTransaction? { state.withLock { $0.kasia[id] } }
    /// The output `outpoint` names, if a remembered Kasia transaction made it.
    func output(_ outpoint: RpcOutpoint) -> RpcUtxoEntry? { state.withLock { $0.outpoints[outpoint] } }
}
