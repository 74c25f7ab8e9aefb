import Foundation
import KasiaProtocol

// The node's wRPC JSON shapes (rusty-kaspa
// rpc/core/src/model). Decoding ignores unknown keys (newer nodes add fields) and reads
// 64-bit integers exactly.

/// `RpcBlock`: a header, its transactions, and verbose data.
public struct RpcBlock: Codable, Hashable, Sendable {
    public var header: RpcBlockHeader
    public var transactions: [RpcTransaction]
    public var verboseData: RpcBlockVerboseData?
}

public struct RpcBlockHeader: Codable, Hashable, Sendable {
    public var hash: String
    /// Milliseconds since the epoch.
    public var timestamp: UInt64
    public var daaScore: UInt64
    public var blueScore: UInt64?
    public var nonce: UInt64?
}

public struct RpcBlockVerboseData: Codable, Hashable, Sendable {
    public var hash: String?
    public var selectedParentHash: String?
    public var transactionIds: [String]?
    public var mergeSetBluesHashes: [String]?
    public var mergeSetRedsHashes: [String]?
    public var isChainBlock: Bool?
}

/// `RpcTransaction`.
///
/// Inputs and outputs are decoded only for Kasia transactions (payload `ciph_msg:`): a block
/// is mostly other transactions, and skipping their scripts is most of the decoding time.
public struct RpcTransaction: Codable, Hashable, Sendable {
    public var inputs: [RpcTransactionInput]
    public var outputs: [RpcTransactionOutput]
    /// Hex of the transaction payload (Kasia's carrier).
    public var payload: String
    public var verboseData: RpcTransactionVerboseData?

    /// The transaction id (from verbose data; nodes always send it in blocks).
    public var id: String? { verboseData?.transactionId }

    public init(inputs: [RpcTransactionInput], outputs: [RpcTransactionOutput], payload: String, verboseData: RpcTransactionVerboseData?) {
        self.inputs = inputs
        self.outputs = outputs
        self.payload = payload
        self.verboseData = verboseData
    }

    enum CodingKeys: String, CodingKey {
        case inputs, outputs, payload, verboseData
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        payload = try c.decode(String.self, forKey: .payload)
        verboseData = try c.decodeIfPresent(RpcTransactionVerboseData.self, forKey: .verboseData)
        if payload.hasPrefix(Self.kasiaPrefixHex) {
            inputs = try c.decode([RpcTransactionInput].self, forKey: .inputs)
            outputs = try c.decode([RpcTransactionOutput].self, forKey: .outputs)
        } else {
            inputs = []
            outputs = []
        }
    }

    /// Whether the payload starts with `ciph_msg:` (a cheap test before parsing).
    public var isKasia: Bool { payload.hasPrefix(Self.kasiaPrefixHex) }

    /// Hex of `ciph_msg:`.
    static let kasiaPrefixHex = Hex.encode(KasiaPayload.prefix)
}

public struct RpcOutpoint: Codable, Hashable, Sendable {
    public var transactionId: String
    public var index: UInt32
    public init(transactionId: String, index: UInt32) {
        self.transactionId = transactionId
        self.index = index
    }
}

public struct RpcTransactionInput: Codable, Hashable, Sendable {
    public var previousOutpoint: RpcOutpoint
    public init(previousOutpoint: RpcOutpoint) { self.previousOutpoint = previousOutpoint }
}

public struct RpcTransactionOutput: Codable, Hashable, Sendable {
    /// Sompi.
    public var value: UInt64
    /// Hex: the 2-byte script version, then the script.
    public var scriptPublicKey: String
    public var verboseData: RpcTransactionOutputVerboseData?

    /// The address the output pays, from verbose data.
    public var address: String? { verboseData?.scriptPublicKeyAddress }

    public init(value: UInt64, scriptPublicKey: String, verboseData: RpcTransactionOutputVerboseData?) {
        self.value = value
        self.scriptPublicKey = scriptPublicKey
        self.verboseData = verboseData
    }
}

public struct RpcTransactionOutputVerboseData: Codable, Hashable, Sendable {
    public var scriptPublicKeyType: String?
    public var scriptPublicKeyAddress: String?

    public init(scriptPublicKeyType: String?, scriptPublicKeyAddress: String?) {
        self.scriptPublicKeyType = scriptPublicKeyType
        self.scriptPublicKeyAddress = scriptPublicKeyAddress
    }
}

public struct RpcTransactionVerboseData: Codable, Hashable, Sendable {
    public var transactionId: String
    public var blockHash: String?
    /// Milliseconds since the epoch.
    public var blockTime: UInt64?

    public init(transactionId: String, blockHash: String?, blockTime: UInt64?) {
        self.transactionId = transactionId
        self.blockHash = blockHash
        self.blockTime = blockTime
    }
}

/// `VirtualChainChanged` (and `getVirtualChainFromBlock`'s answer): the chain blocks added and
/// removed, and the transactions each added block accepted.
public struct VirtualChainChanged: Codable, Hashable, Sendable {
    public struct Acceptance: Codable, Hashable, Sendable {
        public var acceptingBlockHash: String
        public var acceptedTransactionIds: [String]
    }

    public var removedChainBlockHashes: [String]
    public var addedChainBlockHashes: [String]
    public var acceptedTransactionIds: [Acceptance]
}
