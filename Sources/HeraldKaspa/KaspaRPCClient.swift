public import Foundation
public import Logging
import NIOCore
import Synchronization
import WSClient

/// A notification the node pushes after `subscribe`.
public enum KaspaNotification: Sendable {
    case blockAdded(RpcBlock)
    case virtualChainChanged(VirtualChainChanged)
}

/// Why an RPC call failed.
public enum KaspaRPCError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The node answered with `{"error": {...}}`.
    case node(method: String, message: String)
    /// The socket closed before the answer.
    case disconnected
    /// An answer that does not decode.
    case invalidResponse(method: String, detail: String)
    /// No answer within the call's deadline: the node is treated as gone.
    case timedOut(method: String)

    public var description: String {
        switch self {
        case .node(let method, let message): "\(method): node error: \(message)"
        case .disconnected: "the node's socket closed"
        case .invalidResponse(let method, let detail): "\(method): invalid response: \(detail)"
        case .timedOut(let method): "\(method): no answer in time"
        }
    }
}

/// A wRPC JSON client to a Kaspa node: plain text frames
/// `{"id", "method", "params"}`, answers correlated by `id`, notifications
/// `{"method": "<op>Notification", "params": {"<Event>": {…}}}`.
public struct KaspaRPCClient: Sendable {
    public let url: String
    public let logger: Logger
    /// How long a call waits for its answer before the session is given up (default 10 s).
    public var callTimeout: Duration = .seconds(10)
    /// A WebSocket ping this often; a node that misses a pong is disconnected (default 15 s).
    public var pingInterval: Duration = .seconds(15)
    /// The largest frame read from the node (default 8 MiB; a block of a few thousand
    /// transactions is well under it). A larger one is logged and the connection reset.
    public var maximumFrameSize = 1 << 23

    public init(url: String, logger: Logger = Logger(label: "herald.kaspa.rpc")) {
        self.url = url
        self.logger = logger
    }

    /// Connects, runs `body` with the session, and closes. When the node drops the socket,
    /// pending calls fail with `.disconnected` and the notification stream ends.
    public func withSession<T: Sendable>(_ body: @escaping @Sendable (KaspaRPCSession) async throws -> T) async throws -> T {
        let result = Mutex<Result<T, any Error>?>(nil)
        var configuration = WebSocketClientConfiguration()
        configuration.maxFrameSize = maximumFrameSize
        configuration.autoPing = .enabled(timePeriod: pingInterval)
        let (logger, maximumFrameSize, callTimeout) = (self.logger, self.maximumFrameSize, self.callTimeout)
        try await WebSocketClient.connect(url: url, configuration: configuration, logger: logger) { inbound, outbound, _ in
            let session = KaspaRPCSession(outbound: outbound, callTimeout: callTimeout)
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        for try await message in inbound.messages(maxSize: maximumFrameSize) {
                            guard case .text(let text) = message else { continue }
                            session.receive(Data(text.utf8))
                        }
                    } catch {
                        // A frame over the limit, or a broken stream: the session ends and the source reconnects.
                        logger.warning("Kaspa node connection reset", metadata: ["error": "\(error)", "maximum_frame": "\(maximumFrameSize)"])
                    }
                    session.close()
                }
                do {
                    let value = try await body(session)
                    result.withLock { $0 = .success(value) }
                } catch {
                    result.withLock { $0 = .failure(error) }
                }
                session.close()
                group.cancelAll()
            }
        }
        switch result.withLock({ $0 }) {
        case .success(let value)?: return value
        case .failure(let error)?: throw error
        case nil: throw KaspaRPCError.disconnected
        }
    }
}

/// One connection: calls and the notification stream.
public final class KaspaRPCSession: Sendable {
    private let outbound: WebSocketOutboundWriter
    private struct State {
        var nextID: UInt64 = UInt64.random(in: 1..<(1 << 62))
        var pending: [UInt64: CheckedContinuation<Data, any Error>] = [:]
        var closed = false
        /// Frame bytes of the notifications received and not yet taken.
        var bufferedBytes = 0
    }
    private let state = Mutex(State())
    private let buffered: AsyncStream<(KaspaNotification, bytes: Int)>
    private let notify: AsyncStream<(KaspaNotification, bytes: Int)>.Continuation

    /// BlockAdded and VirtualChainChanged, in the order the node sent them. They wait here while
    /// the source is busy (a gap-fill), up to `maximumBufferedNotifications` and
    /// `maximumBufferedBytes`; past either, the session ends (a node that floods is a node that
    /// fails), and the source reconnects and fills the gap from its checkpoint.
    public var notifications: AsyncMapSequence<AsyncStream<(KaspaNotification, bytes: Int)>, KaspaNotification> {
        buffered.map { [self] notification, bytes in
            state.withLock { $0.bufferedBytes -= bytes }
            return notification
        }
    }
    public static let maximumBufferedNotifications = 1_024
    /// Frame bytes of the notifications waiting to be taken: how far behind the node the reader is.
    public var backlogBytes: Int { state.withLock { $0.bufferedBytes } }
    public static let maximumBufferedBytes = 64 << 20

    private let callTimeout: Duration

    init(outbound: WebSocketOutboundWriter, callTimeout: Duration) {
        self.outbound = outbound
        self.callTimeout = callTimeout
        (buffered, notify) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(Self.maximumBufferedNotifications))
    }

    /// What a call sends: `{"id", "method", "params"}`, written by an encoder (no value is ever
    /// spliced into JSON text).
    private struct RequestFrame<Params: Encodable>: Encodable {
        var id: UInt64
        var method: String
        var params: Params
    }

    /// Calls `method` with `params` (encoded as JSON) and returns the whole answer frame.
    public func call(_ method: String, params: some Encodable & Sendable) async throws -> Data {
        let id = state.withLock { s -> UInt64 in
            s.nextID &+= 1
            return s.nextID
        }
        let frame: String
        do {
            frame = String(decoding: try JSONEncoder().encode(RequestFrame(id: id, method: method, params: params)), as: UTF8.self)
        } catch {
            throw KaspaRPCError.invalidResponse(method: method, detail: "the request could not be encoded: \(error)")
        }
        return try await call(method, id: id, frame: frame)
    }

    private func call(_ method: String, id: UInt64, frame: String) async throws -> Data {
        // The deadline: a node that never answers must not hold the source forever.
        let deadline = Task { [callTimeout] in
            try await Task.sleep(for: callTimeout)
            self.state.withLock { $0.pending.removeValue(forKey: id) }?.resume(throwing: KaspaRPCError.timedOut(method: method))
        }
        defer { deadline.cancel() }
        return try await withCheckedThrowingContinuation { continuation in
            let registered = state.withLock { s -> Bool in
                guard !s.closed else { return false }
                s.pending[id] = continuation
                return true
            }
            guard registered else {
                continuation.resume(throwing: KaspaRPCError.disconnected)
                return
            }
            Task {
                do {
                    try await outbound.write(.text(frame))
                } catch {
                    state.withLock { $0.pending.removeValue(forKey: id) }?.resume(throwing: KaspaRPCError.disconnected)
                }
            }
        }
    }

    /// Calls and decodes the answer.
    public func call<T: Decodable>(_ method: String, params: some Encodable & Sendable, as type: T.Type) async throws -> T {
        let data = try await call(method, params: params)
        do {
            // Decoded from the frame itself, so 64-bit integers stay exact.
            return try JSONDecoder().decode(AnswerFrame<T>.self, from: data).params
        } catch {
            throw KaspaRPCError.invalidResponse(method: method, detail: "\(error)")
        }
    }

    /// `subscribe BlockAdded` then `VirtualChainChanged` with accepted transaction ids
    /// (note the snake_case field, as the node's serde form of the scope has it).
    public func subscribeChain() async throws {
        _ = try await call("subscribe", params: ["BlockAdded": [String: Bool]()])
        _ = try await call("subscribe", params: ["VirtualChainChanged": ["include_accepted_transaction_ids": true]])
    }

    public func getBlock(hash: String, includeTransactions: Bool) async throws -> RpcBlock {
        struct Answer: Decodable { var block: RpcBlock }
        return try await call(
            "getBlock", params: GetBlock(hash: hash, includeTransactions: includeTransactions), as: Answer.self
        ).block
    }

    public func getVirtualChainFromBlock(startHash: String) async throws -> VirtualChainChanged {
        try await call(
            "getVirtualChainFromBlock",
            params: GetVirtualChain(startHash: startHash),
            as: VirtualChainChanged.self)
    }

    /// The coins (UTXO entries) the inputs of `transactions` spend, by outpoint, from the node's
    /// `getVirtualChainFromBlockV2` answer from `startHash` (a chain block): its accepted
    /// transactions carry, at the node's default full verbosity, each input's UTXO entry. The
    /// answer is read by `SpentCoinsScanner`: only the transactions asked about are decoded.
    /// - Parameter minConfirmationCount: the node leaves out chain blocks at the head with fewer
    ///   confirmations than this (blue score below its sink), so the answer stops near the block
    ///   asked about; nil for the whole path to the sink.
    public func spentCoins(
        acceptedAfter startHash: String, minConfirmationCount: UInt64? = nil, transactions: Set<String>
    ) async throws -> [RpcOutpoint: RpcUtxoEntry] {
        let method = "getVirtualChainFromBlockV2"
        let data = try await call(method, params: GetVirtualChainV2(startHash: startHash, minConfirmationCount: minConfirmationCount))
        guard let coins = SpentCoinsScanner.coins(in: data, spentBy: transactions) else {
            throw KaspaRPCError.invalidResponse(method: method, detail: "not a virtual chain answer")
        }
        return coins
    }

    public func getUtxoReturnAddress(txid: String, acceptingBlockDaaScore: UInt64) async throws -> String {
        struct Answer: Decodable { var returnAddress: String }
        return try await call(
            "getUtxoReturnAddress", params: GetReturnAddress(acceptingBlockDaaScore: acceptingBlockDaaScore, txid: txid),
            as: Answer.self
        ).returnAddress
    }

    public struct ServerInfo: Decodable, Sendable {
        public var serverVersion: String?
        public var networkId: String?
        public var isSynced: Bool?
        public var virtualDaaScore: UInt64?
    }

    public func getServerInfo() async throws -> ServerInfo {
        return try await call("getServerInfo", params: [String: Bool](), as: ServerInfo.self)
    }

    /// What `getBlockDagInfo` tells of the node's DAG: its sink (the selected tip) and its
    /// pruning point (the oldest block whose history it keeps).
    public struct BlockDagInfo: Decodable, Sendable {
        public var sink: String?
        public var pruningPointHash: String?
    }

    public func getBlockDagInfo() async throws -> BlockDagInfo {
        try await call("getBlockDagInfo", params: [String: Bool](), as: BlockDagInfo.self)
    }

    private struct GetBlock: Encodable, Sendable {
        var hash: String
        var includeTransactions: Bool
    }

    private struct GetVirtualChain: Encodable, Sendable {
        var startHash: String
        var includeAcceptedTransactionIds = true

        enum CodingKeys: String, CodingKey { case startHash, includeAcceptedTransactionIds, minConfirmationCount }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(includeAcceptedTransactionIds, forKey: .includeAcceptedTransactionIds)
            try c.encodeNil(forKey: .minConfirmationCount)
            try c.encode(startHash, forKey: .startHash)
        }
    }

    /// V2's request; `dataVerbosityLevel` is left out (the node's default, full, gives inputs' UTXO entries).
    private struct GetVirtualChainV2: Encodable, Sendable {
        var startHash: String
        var minConfirmationCount: UInt64?

        enum CodingKeys: String, CodingKey { case startHash, minConfirmationCount }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(startHash, forKey: .startHash)
            try c.encode(minConfirmationCount, forKey: .minConfirmationCount)
        }
    }

    private struct GetReturnAddress: Encodable, Sendable {
        var acceptingBlockDaaScore: UInt64
        var txid: String
    }

    /// One frame from the node.
    func receive(_ data: Data) {
        switch KaspaFrame.decode(data) {
        case .answer(let id, let method, let error)?:
            guard let continuation = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return }
            if let error {
                continuation.resume(throwing: KaspaRPCError.node(method: method, message: error))
            } else {
                continuation.resume(returning: data)
            }
        case .notification(let notification)?:
            let full = state.withLock { s -> Bool in
                guard s.bufferedBytes + data.count <= Self.maximumBufferedBytes else { return true }
                s.bufferedBytes += data.count
                return false
            }
            guard !full, case .enqueued = notify.yield((notification, data.count)) else {
                close()
                return
            }
        case nil:
            break
        }
    }

    /// Fails every pending call and ends the notification stream.
    func close() {
        let pending = state.withLock { s -> [CheckedContinuation<Data, any Error>] in
            s.closed = true
            defer { s.pending = [:] }
            return Array(s.pending.values)
        }
        for continuation in pending { continuation.resume(throwing: KaspaRPCError.disconnected) }
        notify.finish()
    }
}

/// An answer frame's `params`, decoded from the frame itself.
struct AnswerFrame<T: Decodable>: Decodable {
    var params: T
}

/// A frame from the node, decoded: an answer to a call, or a notification.
public enum KaspaFrame: Sendable {
    case answer(id: UInt64, method: String, error: String?)
    case notification(KaspaNotification)

    /// A frame's `id`, `method` and `error`, read from its bytes: its `params` (a block, or a V2
    /// answer of every transaction a stretch of the chain accepted) are skipped, not parsed.
    private struct Envelope {
        struct RPCError: Decodable { var message: String? }
        var id: UInt64?
        var method: String?
        /// The node's message; "error" for an error without one.
        var error: String?

        init?(_ data: Data) {
            var (id, method, error): (UInt64?, String?, String?) = (nil, nil, nil)
            let ok = data.withUnsafeBytes { raw -> Bool in
                var reader = JSONBytes(raw)
                return reader.object { key, reader in
                    guard !reader.isNull else { return reader.skipValue() }
                    switch key {
                    case "id": return reader.unsigned(into: &id)
                    case "method": return reader.string(into: &method)
                    case "error":
                        // An object with a message (what nodes send), or a bare string; small, so decoded.
                        guard let range = reader.valueRange() else { return false }
                        let bytes = data[range]
                        error = (try? JSONDecoder().decode(RPCError.self, from: bytes)).map { $0.message ?? "error" }
                            ?? (try? JSONDecoder().decode(String.self, from: bytes)) ?? "error"
                        return true
                    default: return reader.skipValue()
                    }
                }
            }
            guard ok else { return nil }
            (self.id, self.method, self.error) = (id, method, error)
        }
    }

    private struct BlockAddedFrame: Decodable {
        struct Params: Decodable {
            struct Event: Decodable { var block: RpcBlock }
            var BlockAdded: Event
        }
        var params: Params
    }

    private struct ChainChangedFrame: Decodable {
        struct Params: Decodable { var VirtualChainChanged: HeraldKaspa.VirtualChainChanged }
        var params: Params
    }

    /// Decodes a text frame; nil for frames Herald does not use. Blocks (most of the traffic)
    /// are read by `BlockFrameScanner`, which decodes only their Kasia transactions.
    public static func decode(_ data: Data) -> KaspaFrame? {
        if let block = BlockFrameScanner.block(from: data) { return .notification(.blockAdded(block)) }
        guard let envelope = Envelope(data) else { return nil }
        if let id = envelope.id { return .answer(id: id, method: envelope.method ?? "", error: envelope.error) }
        let decoder = JSONDecoder()
        switch envelope.method {
        case "blockAddedNotification":
            return (try? decoder.decode(BlockAddedFrame.self, from: data)).map { .notification(.blockAdded($0.params.BlockAdded.block)) }
        case "virtualChainChangedNotification":
            return (try? decoder.decode(ChainChangedFrame.self, from: data)).map { .notification(.virtualChainChanged($0.params.VirtualChainChanged)) }
        default:
            return nil
        }
    }
}
