import Foundation
public import KasiaProtocol

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
/// Inputs, outputs and the other signed fields are decoded only for Kasia transactions (payload
/// `ciph_msg:`): a block is mostly other transactions, and skipping their scripts is most of the
/// decoding time.
public struct RpcTransaction: Codable, Hashable, Sendable {
    public var inputs: [RpcTransactionInput]
    public var outputs: [RpcTransactionOutput]
    /// Hex of the transaction payload (Kasia's carrier).
    public var payload: String
    public var verboseData: RpcTransactionVerboseData?
    /// The signed fields a sender proof needs besides inputs, outputs and payload (nil when the
    /// node left them out, or the transaction is not Kasia).
    public var version: UInt16?
    public var lockTime: UInt64?
    /// Hex, 20 bytes.
    public var subnetworkId: String?
    public var gas: UInt64?

    /// The transaction id (from verbose data; nodes always send it in blocks).
    public var id: String? { verboseData?.transactionId }

    public init(inputs: [RpcTransactionInput], outputs: [RpcTransactionOutput], payload: String, verboseData: RpcTransactionVerboseData?) {
        self.inputs = inputs
        self.outputs = outputs
        self.payload = payload
        self.verboseData = verboseData
    }

    enum CodingKeys: String, CodingKey {
        case inputs, outputs, payload, verboseData, version, lockTime, subnetworkId, gas
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        payload = try c.decode(String.self, forKey: .payload)
        verboseData = try c.decodeIfPresent(RpcTransactionVerboseData.self, forKey: .verboseData)
        if payload.hasPrefix(Self.kasiaPrefixHex) {
            inputs = try c.decode([RpcTransactionInput].self, forKey: .inputs)
            outputs = try c.decode([RpcTransactionOutput].self, forKey: .outputs)
            version = try c.decodeIfPresent(UInt16.self, forKey: .version)
            lockTime = try c.decodeIfPresent(UInt64.self, forKey: .lockTime)
            subnetworkId = try c.decodeIfPresent(String.self, forKey: .subnetworkId)
            gas = try c.decodeIfPresent(UInt64.self, forKey: .gas)
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
    /// Hex.
    public var signatureScript: String?
    public var sequence: UInt64?
    public var sigOpCount: UInt8?
    /// The output this input spends, when the node tells (`verboseData.utxoEntry`, which nodes
    /// give with `getVirtualChainFromBlockV2`'s verbose levels; nil otherwise).
    public var utxoEntry: RpcUtxoEntry?

    public init(
        previousOutpoint: RpcOutpoint, signatureScript: String? = nil, sequence: UInt64? = nil, sigOpCount: UInt8? = nil,
        utxoEntry: RpcUtxoEntry? = nil
    ) {
        self.previousOutpoint = previousOutpoint
        self.signatureScript = signatureScript
        self.sequence = sequence
        self.sigOpCount = sigOpCount
        self.utxoEntry = utxoEntry
    }

    enum CodingKeys: String, CodingKey { case previousOutpoint, signatureScript, sequence, sigOpCount, verboseData }
    enum VerboseKeys: String, CodingKey { case utxoEntry }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        previousOutpoint = try c.decode(RpcOutpoint.self, forKey: .previousOutpoint)
        signatureScript = try c.decodeIfPresent(String.self, forKey: .signatureScript)
        sequence = try c.decodeIfPresent(UInt64.self, forKey: .sequence)
        sigOpCount = try c.decodeIfPresent(UInt8.self, forKey: .sigOpCount)
        if c.contains(.verboseData), try c.decodeNil(forKey: .verboseData) == false {
            let verbose = try c.nestedContainer(keyedBy: VerboseKeys.self, forKey: .verboseData)
            utxoEntry = try verbose.decodeIfPresent(RpcUtxoEntry.self, forKey: .utxoEntry)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(previousOutpoint, forKey: .previousOutpoint)
        try c.encodeIfPresent(signatureScript, forKey: .signatureScript)
        try c.encodeIfPresent(sequence, forKey: .sequence)
        try c.encodeIfPresent(sigOpCount, forKey: .sigOpCount)
        if let utxoEntry {
            var verbose = c.nestedContainer(keyedBy: VerboseKeys.self, forKey: .verboseData)
            try verbose.encode(utxoEntry, forKey: .utxoEntry)
        }
    }
}

/// An output as the UTXO set keeps it: what an input spends.
public struct RpcUtxoEntry: Codable, Hashable, Sendable {
    /// Sompi.
    public var amount: UInt64
    /// Hex: the 2-byte script version, then the script.
    public var scriptPublicKey: String
    /// The address it pays, from verbose data.
    public var address: String?

    public init(amount: UInt64, scriptPublicKey: String, address: String?) {
        self.amount = amount
        self.scriptPublicKey = scriptPublicKey
        self.address = address
    }

    enum CodingKeys: String, CodingKey { case amount, scriptPublicKey, verboseData }
    enum VerboseKeys: String, CodingKey { case scriptPublicKeyAddress }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        amount = try c.decode(UInt64.self, forKey: .amount)
        scriptPublicKey = try c.decode(String.self, forKey: .scriptPublicKey)
        if c.contains(.verboseData), try c.decodeNil(forKey: .verboseData) == false {
            address = try c.nestedContainer(keyedBy: VerboseKeys.self, forKey: .verboseData).decodeIfPresent(String.self, forKey: .scriptPublicKeyAddress)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(amount, forKey: .amount)
        try c.encode(scriptPublicKey, forKey: .scriptPublicKey)
        if let address {
            var verbose = c.nestedContainer(keyedBy: VerboseKeys.self, forKey: .verboseData)
            try verbose.encode(address, forKey: .scriptPublicKeyAddress)
        }
    }
}

public struct RpcTransactionOutput: Codable, Hashable, Sendable {
    /// Sompi.
    public var value: UInt64
    /// Hex: the 2-byte script version, then the script.
    public var scriptPublicKey: String
    public var verboseData: RpcTransactionOutputVerboseData?

    /// The address the output pays, from verbose data.
    public var address: String? { verboseData?.scriptPublicKeyAddress }

    /// The output as the UTXO entry of whoever spends it.
    public var utxoEntry: RpcUtxoEntry { RpcUtxoEntry(amount: value, scriptPublicKey: scriptPublicKey, address: address) }

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

extension RpcTransaction {
    /// The proof a phone checks the sender with (`KaspaTransactionProof`): this transaction's
    /// signed fields and `spent`, the output its input 0 spends. Nil when the node left a signed
    /// field out, a field is malformed, or `spent` is not a Schnorr key's (nothing a phone could
    /// verify). The payload is left out: a push carries it once, as `kasia.payload`.
    public func senderProof(spending spent: RpcUtxoEntry) -> KaspaTransactionProof? {
        guard let version, let lockTime, let gas, let subnetwork = subnetworkId.flatMap({ Hex.decode($0) }), subnetwork.count == 20,
            let spentOutput = Self.output(value: spent.amount, scriptPublicKey: spent.scriptPublicKey),
            KaspaTransactionProof.schnorrKey(script: spentOutput.script.bytes, version: spentOutput.scriptVersion) != nil
        else { return nil }
        var inputs: [KaspaTransactionProof.Input] = []
        for input in self.inputs {
            guard let id = Hex.decode(input.previousOutpoint.transactionId), id.count == 32, let sequence = input.sequence,
                let sigOpCount = input.sigOpCount, let script = input.signatureScript.flatMap({ Hex.decode($0) })
            else { return nil }
            inputs.append(.init(transactionID: id, index: input.previousOutpoint.index, sequence: sequence, sigOpCount: sigOpCount, signatureScript: script))
        }
        var outputs: [KaspaTransactionProof.Output] = []
        for output in self.outputs {
            guard let proofOutput = Self.output(value: output.value, scriptPublicKey: output.scriptPublicKey) else { return nil }
            outputs.append(proofOutput)
        }
        guard !inputs.isEmpty else { return nil }
        return KaspaTransactionProof(
            version: version, inputs: inputs, outputs: outputs, lockTime: lockTime, subnetworkID: subnetwork, gas: gas, payload: [],
            spent: spentOutput)
    }

    /// A node's script public key (the version as 4 hex digits, then the script) as a proof's output.
    static func output(value: UInt64, scriptPublicKey: String) -> KaspaTransactionProof.Output? {
        guard let bytes = Hex.decode(scriptPublicKey), bytes.count >= 2 else { return nil }
        return KaspaTransactionProof.Output(value: value, scriptVersion: UInt16(bytes[0]) << 8 | UInt16(bytes[1]), script: Array(bytes.dropFirst(2)))
    }
}
