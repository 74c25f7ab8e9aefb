import Foundation
import HeraldKaspa
import Hummingbird
import HummingbirdWebSocket
public import Logging
import NIOCore
public import Synchronization

/// A Kaspa node look-alike for tests: wRPC JSON over WebSocket with the node's frames
/// — `subscribe` (BlockAdded, VirtualChainChanged), `getBlock`, `getBlockDagInfo`,
/// `getVirtualChainFromBlock` (in batches, as the node answers it), `getVirtualChainFromBlockV2`
/// (its accepted transactions at full verbosity: each input with the UTXO entry it spends, when
/// the simulator made that output), `getUtxoReturnAddress`, `getServerInfo` — fed with transactions
/// in the node's RPC JSON. Blocks carry the node's full header, so the official SDK decodes them.
///
/// Its DAG is simple: each `produce` makes one chain block (and optional parallel blocks) whose
/// merge set is those blocks, and which accepts their transactions at once.
public final class KaspaNodeSimulator: Sendable {
    struct Connection {
        var outbound: WebSocketOutboundWriter
        var blockAdded = false
        var virtualChainChanged = false
        var close: @Sendable () -> Void
    }

    struct State {
        var blocks: [String: String] = [:]  // hash -> block JSON with transactions
        var headers: [String: String] = [:]  // hash -> block JSON without transactions
        var chain: [String] = []
        var accepted: [String: [String]] = [:]  // chain block -> txids
        var transactions: [String: Made] = [:]  // txid -> the transaction as produced, and its block's DAA score
        var headerFields: [String: String] = [:]  // chain block -> a V2 answer's chainBlockHeader JSON
        var blueScores: [String: UInt64] = [:]  // block -> its blue score (here its DAA score)
        /// Whether it answers `getVirtualChainFromBlockV2` (nodes before it answer an error).
        var answersV2 = true
        var daaScore: UInt64 = 100_000_000
        var sequence: UInt64 = 0
        var returnAddresses: [String: String] = [:]  // txid -> sender
        var connections: [Int: Connection] = [:]
        var nextConnection = 0
        var requests: [String] = []
        /// A hung node: it reads calls and answers none.
        var silent = false
        /// Calls to fail next, by method.
        var failures: [String: Int] = [:]
        /// At most this many chain blocks per `getVirtualChainFromBlock` answer (the node's batch).
        var chainBatch = 1800
        /// The oldest chain block kept; older ones were pruned.
        var pruningPoint = String(repeating: "0", count: 64)
    }

    /// A transaction as `produce` was given it (read only, so shared as it is) and its block's DAA score.
    struct Made: @unchecked Sendable {
        let json: [String: Any]
        /// `json` as the block's JSON has it: a V2 answer reuses it for a transaction spending no coin it made.
        let text: String
        let daaScore: UInt64
    }

    private let state = Mutex(State())
    /// Held while a block is made: producers one at a time, calls answered meanwhile.
    private let producing = Mutex(())
    private let running = Mutex<Task<Void, any Error>?>(nil)
    /// The port it listens on, once started.
    public let port: Int
    public var url: String { "ws://127.0.0.1:\(port)" }
    /// Makes the node hang (it reads calls and answers none) or answer again.
    public func setSilent(_ silent: Bool) { state.withLock { $0.silent = silent } }
    /// The next `count` calls of `method` answer a node error, as a busy node's may.
    public func failNext(_ method: String, count: Int = 1) { state.withLock { $0.failures[method, default: 0] += count } }
    /// How many chain blocks one `getVirtualChainFromBlock` answer carries at most (a real node:
    /// ten times its merge-set limit, 1,800 on mainnet); the rest is asked for again.
    public func setChainBatch(_ blocks: Int) { state.withLock { $0.chainBatch = max(1, blocks) } }
    /// Answers `getVirtualChainFromBlockV2`, or refuses it as a node before it does.
    public func setAnswersV2(_ answers: Bool) { state.withLock { $0.answersV2 = answers } }

    /// Forgets every chain block but the newest `count` (and the blocks they merged), as a node
    /// does below its pruning point; the oldest kept becomes the pruning point.
    public func prune(keepingLast count: Int) {
        state.withLock { s in
            let dropped = s.chain.dropLast(max(1, count))
            for hash in dropped {
                s.blocks[hash] = nil
                s.headers[hash] = nil
                s.accepted[hash] = nil
            }
            s.chain.removeFirst(dropped.count)
            if let first = s.chain.first { s.pruningPoint = first }
        }
    }

    /// The time written into new blocks (ms); tests move it.
    public let blockTime = Mutex<UInt64>(UInt64(Date().timeIntervalSince1970 * 1000))

    private init(port: Int) {
        self.port = port
    }

    /// Starts listening on 127.0.0.1 (`port` 0 picks a free one).
    public static func start(port: Int = 0, logger: Logger = Logger(label: "kaspa-node-simulator")) async throws -> KaspaNodeSimulator {
        let bound = AsyncStream<Int>.makeStream()
        let holder = Mutex<KaspaNodeSimulator?>(nil)
        let app = Application(
            router: Router(),
            server: .http1WebSocketUpgrade { _, _, _ in
                .upgrade([:]) { inbound, outbound, _ in
                    guard let node = holder.withLock({ $0 }) else { return }
                    try await node.serve(inbound: inbound, outbound: outbound)
                }
            },
            configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "kaspa-node-simulator"),
            onServerRunning: { channel in
                bound.continuation.yield(channel.localAddress?.port ?? 0)
                bound.continuation.finish()
            },
            logger: logger)
        let task = Task { try await app.run() }
        var iterator = bound.stream.makeAsyncIterator()
        guard let actual = await iterator.next() else { throw KaspaRPCError.disconnected }
        let node = KaspaNodeSimulator(port: actual)
        holder.withLock { $0 = node }
        node.running.withLock { $0 = task }
        return node
    }

    public func shutdown() async {
        let task = running.withLock { $0 }
        task?.cancel()
        _ = try? await task?.value
    }

    /// Methods of the requests received so far (tests check what a client asked).
    public var requests: [String] { state.withLock { $0.requests } }

    /// The DAA score of a block it produced.
    public func daaScore(ofBlock hash: String) -> UInt64? {
        state.withLock { s in
            s.headers[hash].flatMap { try? JSONDecoder().decode(RpcBlock.self, from: Data($0.utf8)).header.daaScore }
        }
    }

    /// How many clients are connected.
    public var connectionCount: Int { state.withLock { $0.connections.count } }

    /// Closes every client's socket (a node restart or a network cut).
    public func dropConnections() {
        let closes = state.withLock { s -> [@Sendable () -> Void] in
            defer { s.connections = [:] }
            return s.connections.values.map(\.close)
        }
        for close in closes { close() }
    }

    // MARK: The chain

    /// Adds a chain block holding `transactions` (RPC JSON objects), and parallel blocks holding
    /// `parallel`, all accepted by the chain block; notifies subscribers. Returns the chain block's hash.
    /// `senders` answers `getUtxoReturnAddress` for those txids.
    @discardableResult
    public func produce(_ transactions: [[String: Any]], parallel: [[[String: Any]]] = [], senders: [String: String] = [:]) async -> String {
        var notifications: [String] = []
        let hash = producing.withLock { _ -> String in
            // The transactions are written before the state is locked (a block of hundreds takes
            // a while), so calls are answered meanwhile; producers go one at a time, so the
            // sequence numbers read here are the ones the blocks get.
            let first = state.withLock { $0.sequence } + 1
            let time = blockTime.withLock { $0 }
            let sides = parallel.enumerated().map { Self.rehome($0.element, hash: Self.hash(first + UInt64($0.offset)), time: time) }
            let main = Self.rehome(transactions, hash: Self.hash(first + UInt64(parallel.count)), time: time)
            return state.withLock { s -> String in
                s.returnAddresses.merge(senders) { _, new in new }
                var merged: [String] = []
                var txids: [String] = []
                for side in sides {
                    let (hash, ids, json) = makeBlock(&s, side, time: time, mergeSet: [], chain: false)
                    merged.append(hash)
                    txids += ids
                    notifications.append(blockAdded(json))
                }
                let (hash, ids, json) = makeBlock(&s, main, time: time, mergeSet: merged, chain: true)
                notifications.append(blockAdded(json))
                var seen = Set<String>()
                let acceptedIDs = (ids + txids).filter { seen.insert($0).inserted }
                s.chain.append(hash)
                s.accepted[hash] = acceptedIDs
                notifications.append(Self.virtualChainChanged(removed: [], added: [hash], accepted: [(hash, acceptedIDs)]))
                return hash
            }
        }
        await broadcast(notifications)
        return hash
    }

    /// Replaces the last chain block with a new one that accepts the same transactions (a
    /// reorg that re-accepts them); notifies subscribers.
    public func reorgLastBlock() async {
        var notifications: [String] = []
        producing.withLock { _ in state.withLock { s in
            guard let old = s.chain.popLast() else { return }
            // As a node tells of it from now on: no longer a chain block.
            s.blocks[old] = s.blocks[old]?.replacingOccurrences(of: #""isChainBlock":true"#, with: #""isChainBlock":false"#)
            s.headers[old] = s.headers[old]?.replacingOccurrences(of: #""isChainBlock":true"#, with: #""isChainBlock":false"#)
            let ids = s.accepted[old] ?? []
            let (hash, _, json) = makeBlock(&s, [], time: blockTime.withLock { $0 }, mergeSet: [old], chain: true)
            s.chain.append(hash)
            s.accepted[hash] = ids
            notifications.append(blockAdded(json))
            notifications.append(Self.virtualChainChanged(removed: [old], added: [hash], accepted: [(hash, ids)]))
        } }
        await broadcast(notifications)
    }

    /// A block's transactions re-homed to block `hash`, each written once (the block's JSON is made
    /// of these texts, and a V2 answer reuses them).
    private struct Rehomed {
        var id: String?
        var json: [String: Any]
        var text: String
    }

    private static func rehome(_ transactions: [[String: Any]], hash: String, time: UInt64) -> [Rehomed] {
        transactions.map { tx in
            var tx = tx
            var verbose = tx["verboseData"] as? [String: Any] ?? [:]
            verbose["blockHash"] = hash
            verbose["blockTime"] = time
            tx["verboseData"] = verbose
            return Rehomed(id: verbose["transactionId"] as? String, json: tx, text: json(tx))
        }
    }

    /// Builds a block: header fields as the node writes them, its transactions (re-homed to it).
    private func makeBlock(_ s: inout State, _ transactions: [Rehomed], time: UInt64, mergeSet: [String], chain: Bool) -> (String, [String], String) {
        s.sequence += 1
        s.daaScore += 1
        let hash = Self.hash(s.sequence)
        var ids: [String] = []
        for tx in transactions {
            guard let id = tx.id else { continue }
            ids.append(id)
            // Kept as given (a block makes hundreds): V2 answers read them when asked.
            s.transactions[id] = Made(json: tx.json, text: tx.text, daaScore: s.daaScore)
        }
        let texts = transactions.map(\.text)
        let parent = s.chain.last ?? String(repeating: "0", count: 64)
        let header: [String: Any] = [
            "hash": hash, "version": 1, "parentsByLevel": [[parent]], "hashMerkleRoot": String(repeating: "0", count: 64),
            "acceptedIdMerkleRoot": String(repeating: "0", count: 64), "utxoCommitment": String(repeating: "0", count: 64),
            "timestamp": time, "bits": 486_722_099, "nonce": s.sequence, "daaScore": s.daaScore,
            "blueWork": String(repeating: "0", count: 48), "blueScore": s.daaScore, "pruningPoint": String(repeating: "0", count: 64),
        ]
        let verbose: [String: Any] = [
            "hash": hash, "difficulty": 1.0, "selectedParentHash": parent, "transactionIds": ids, "isHeaderOnly": false,
            "blueScore": s.daaScore, "childrenHashes": [String](), "mergeSetBluesHashes": [hash] + mergeSet,
            "mergeSetRedsHashes": [String](), "isChainBlock": chain,
        ]
        let full = #"{"header":\#(Self.json(header)),"transactions":[\#(texts.joined(separator: ","))],"verboseData":\#(Self.json(verbose))}"#
        s.blocks[hash] = full
        s.headers[hash] = Self.json(["header": header, "transactions": [[String: Any]](), "verboseData": verbose])
        // A V2 answer's header is `RpcOptionalHeader`, whose parents are compressed: its plain fields only.
        s.headerFields[hash] = Self.json(["hash": hash, "timestamp": time, "daaScore": s.daaScore, "blueScore": s.daaScore])
        s.blueScores[hash] = s.daaScore
        return (hash, ids, full)
    }

    private static func hash(_ n: UInt64) -> String {
        let hex = String(n, radix: 16)
        return "ab" + String(repeating: "0", count: 62 - hex.count) + hex
    }

    private func blockAdded(_ blockJSON: String) -> String {
        #"{"method":"blockAddedNotification","params":{"BlockAdded":{"block":\#(blockJSON)}}}"#
    }

    static func virtualChainChanged(removed: [String], added: [String], accepted: [(String, [String])]) -> String {
        #"{"method":"virtualChainChangedNotification","params":{"VirtualChainChanged":\#(chainChange(removed: removed, added: added, accepted: accepted))}}"#
    }

    static func chainChange(removed: [String], added: [String], accepted: [(String, [String])]) -> String {
        json([
            "removedChainBlockHashes": removed, "addedChainBlockHashes": added,
            "acceptedTransactionIds": accepted.map { ["acceptingBlockHash": $0.0, "acceptedTransactionIds": $0.1] as [String: Any] },
        ])
    }

    static func json(_ object: Any) -> String {
        // Keys unsorted: sorting them (a locale-aware comparison) was most of a block's cost.
        String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [])) ?? Data("{}".utf8), as: UTF8.self)
    }

    private func broadcast(_ frames: [String]) async {
        let targets = state.withLock { s in s.connections.values.map { ($0.outbound, $0.blockAdded, $0.virtualChainChanged) } }
        for frame in frames {
            let isBlock = frame.hasPrefix(#"{"method":"blockAdded"#)
            for (outbound, blockAdded, chain) in targets where isBlock ? blockAdded : chain {
                try? await outbound.write(.text(frame))
            }
        }
    }

    // MARK: The socket

    private func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        let closed = AsyncStream<Void>.makeStream()
        let id = state.withLock { s -> Int in
            s.nextConnection += 1
            s.connections[s.nextConnection] = Connection(outbound: outbound, close: { closed.continuation.finish() })
            return s.nextConnection
        }
        defer { _ = state.withLock { $0.connections.removeValue(forKey: id) } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for try await message in inbound.messages(maxSize: 1 << 24) {
                    guard case .text(let text) = message, let reply = self.answer(text, connection: id) else { continue }
                    try await outbound.write(.text(reply))
                }
            }
            group.addTask {
                for await _ in closed.stream {}  // dropConnections() ends the socket
            }
            _ = try await group.next()
            group.cancelAll()
        }
    }

    /// The reply frame to one request.
    func answer(_ text: String, connection: Int) -> String? {
        struct Request: Decodable { var id: UInt64?; var method: String }
        guard let request = try? JSONDecoder().decode(Request.self, from: Data(text.utf8)), let id = request.id else { return nil }
        let params = ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any])?["params"] as? [String: Any] ?? [:]
        func reply(_ json: String) -> String { #"{"id":\#(id),"method":"\#(request.method)","params":\#(json)}"# }
        func error(_ message: String) -> String {
            #"{"id":\#(id),"method":"\#(request.method)","error":{"code":0,"message":\#(Self.json([message]).dropFirst().dropLast()),"data":null}}"#
        }
        return state.withLock { s -> String? in
            s.requests.append(request.method)
            if s.silent { return nil }
            if let left = s.failures[request.method], left > 0 {
                s.failures[request.method] = left - 1
                return error("the node is busy, try again")
            }
            switch request.method {
            case "subscribe":
                if params["BlockAdded"] != nil { s.connections[connection]?.blockAdded = true }
                if params["VirtualChainChanged"] != nil { s.connections[connection]?.virtualChainChanged = true }
                return reply(#"{"id":\#(connection)}"#)
            case "getServerInfo":
                return reply(Self.json([
                    "rpcApiVersion": 1, "rpcApiRevision": 0, "serverVersion": "1.1.0-simulator", "networkId": "mainnet",
                    "hasUtxoIndex": true, "isSynced": true, "virtualDaaScore": s.daaScore,
                ]))
            case "getBlockDagInfo":
                return reply(Self.json([
                    "network": "mainnet", "blockCount": s.blocks.count, "headerCount": s.headers.count, "tipHashes": Array(s.chain.suffix(1)),
                    "difficulty": 1.0, "pastMedianTime": blockTime.withLock { $0 }, "virtualParentHashes": Array(s.chain.suffix(1)),
                    "pruningPointHash": s.pruningPoint, "virtualDaaScore": s.daaScore, "sink": s.chain.last ?? s.pruningPoint,
                ]))
            case "getBlock":
                guard let hash = params["hash"] as? String, let block = (params["includeTransactions"] as? Bool ?? false) ? s.blocks[hash] : s.headers[hash]
                else { return error("block not found") }
                return reply(#"{"block":\#(block)}"#)
            case "getVirtualChainFromBlock":
                guard let start = params["startHash"] as? String, let index = s.chain.firstIndex(of: start) else {
                    return error("start hash is not a chain block")
                }
                let added = Array(s.chain[(index + 1)...].prefix(s.chainBatch))
                return reply(Self.chainChange(removed: [], added: added, accepted: added.map { ($0, s.accepted[$0] ?? []) }))
            case "getVirtualChainFromBlockV2":
                guard s.answersV2 else { return error("method not supported by this node: \(request.method)") }
                guard let start = params["startHash"] as? String, let index = s.chain.firstIndex(of: start) else {
                    return error("start hash is not a chain block")
                }
                var added = Array(s.chain[(index + 1)...].prefix(s.chainBatch))
                // As rusty-kaspa: a positive minConfirmationCount strips the head while its distance
                // from the sink (in blue score) is not more than the count.
                if let count = (params["minConfirmationCount"] as? NSNumber)?.uint64Value, count > 0 {
                    let sink = s.chain.last.flatMap { s.blueScores[$0] } ?? 0
                    while let head = added.last, sink - min(sink, s.blueScores[head] ?? 0) <= count { added.removeLast() }
                }
                // The UTXO entry of an output the simulator made, as a V2 input's verbose data carries it.
                func entry(_ outpoint: [String: Any]) -> [String: Any]? {
                    guard let txid = outpoint["transactionId"] as? String, let index = outpoint["index"] as? Int, let made = s.transactions[txid],
                        let outputs = made.json["outputs"] as? [[String: Any]], outputs.indices.contains(index)
                    else { return nil }
                    let output = outputs[index]
                    var entry: [String: Any] = [
                        "amount": output["value"] ?? 0, "scriptPublicKey": output["scriptPublicKey"] ?? "", "blockDaaScore": made.daaScore,
                        "isCoinbase": false,
                    ]
                    if let verbose = output["verboseData"] { entry["verboseData"] = verbose }
                    return entry
                }
                // Written from the kept texts (a block's worth of JSON per chain block): a transaction
                // is written again only when an input spends a coin the simulator made.
                let blocks: [String] = added.map { hash in
                    let transactions: [String] = (s.accepted[hash] ?? []).compactMap { txid in
                        guard let made = s.transactions[txid] else { return nil }
                        let inputs = made.json["inputs"] as? [[String: Any]] ?? []
                        let entries = inputs.map { entry($0["previousOutpoint"] as? [String: Any] ?? [:]) }
                        guard entries.contains(where: { $0 != nil }) else { return made.text }
                        var tx = made.json
                        tx["inputs"] = zip(inputs, entries).map { input, entry in
                            var input = input
                            input["verboseData"] = entry.map { ["utxoEntry": $0] as [String: Any] } ?? NSNull()
                            return input
                        }
                        return Self.json(tx)
                    }
                    let header = s.headerFields[hash] ?? Self.json(["hash": hash])
                    return #"{"acceptedTransactions":[\#(transactions.joined(separator: ","))],"chainBlockHeader":\#(header)}"#
                }
                return reply(
                    #"{"addedChainBlockHashes":\#(Self.json(added)),"chainBlockAcceptedTransactions":[\#(blocks.joined(separator: ","))],"removedChainBlockHashes":[]}"#)
            case "getUtxoReturnAddress":
                guard let txid = params["txid"] as? String, let address = s.returnAddresses[txid] else { return error("TransactionNotFound") }
                return reply(Self.json(["returnAddress": address]))
            default:
                return error("method not supported by the simulator: \(request.method)")
            }
        }
    }
}
