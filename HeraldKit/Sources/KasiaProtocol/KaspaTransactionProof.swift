/// What a phone needs to check, itself, that a Kasia transaction was signed by the address it
/// claims as sender: the transaction's signed fields and the output its input 0 spends (amount
/// and script, which Kaspa's signature hash commits to). The sender of a Kaspa transaction is the
/// owner of the coin input 0 spends; its key signs the hash of the whole transaction, payload
/// included, so neither the gateway nor the push service can re-attribute or rewrite it.
///
/// The JSON form (hex strings for bytes, numbers for integers):
/// `{"version", "inputs": [{"transaction_id", "index", "sequence", "sig_op_count",
/// "signature_script"}], "outputs": [{"value", "script_version", "script"}], "lock_time",
/// "subnetwork_id", "gas", "payload", "spent": {"value", "script_version", "script"}}`.
public struct KaspaTransactionProof: Hashable, Sendable, Codable {
    public struct Input: Hashable, Sendable, Codable {
        /// The spent output's transaction id (32 bytes, in the order its hex is written).
        public var transactionID: HexBytes
        public var index: UInt32
        public var sequence: UInt64
        public var sigOpCount: UInt8
        public var signatureScript: HexBytes

        public init(transactionID: [UInt8], index: UInt32, sequence: UInt64, sigOpCount: UInt8, signatureScript: [UInt8]) {
            self.transactionID = HexBytes(transactionID)
            self.index = index
            self.sequence = sequence
            self.sigOpCount = sigOpCount
            self.signatureScript = HexBytes(signatureScript)
        }

        enum CodingKeys: String, CodingKey {
            case transactionID = "transaction_id", index, sequence, sigOpCount = "sig_op_count", signatureScript = "signature_script"
        }
    }

    /// An output: of the transaction, or the one input 0 spends.
    public struct Output: Hashable, Sendable, Codable {
        public var value: UInt64
        public var scriptVersion: UInt16
        public var script: HexBytes

        public init(value: UInt64, scriptVersion: UInt16, script: [UInt8]) {
            self.value = value
            self.scriptVersion = scriptVersion
            self.script = HexBytes(script)
        }

        enum CodingKeys: String, CodingKey { case value, scriptVersion = "script_version", script }
    }

    public var version: UInt16
    public var inputs: [Input]
    public var outputs: [Output]
    public var lockTime: UInt64
    /// 20 bytes (zero for native transactions).
    public var subnetworkID: HexBytes
    public var gas: UInt64
    /// The transaction payload; empty in a push, where it travels once as `kasia.payload`.
    public var payload: HexBytes
    /// The output input 0 spends.
    public var spent: Output

    public init(
        version: UInt16, inputs: [Input], outputs: [Output], lockTime: UInt64, subnetworkID: [UInt8], gas: UInt64, payload: [UInt8],
        spent: Output
    ) {
        self.version = version
        self.inputs = inputs
        self.outputs = outputs
        self.lockTime = lockTime
        self.subnetworkID = HexBytes(subnetworkID)
        self.gas = gas
        self.payload = HexBytes(payload)
        self.spent = spent
    }

    enum CodingKeys: String, CodingKey {
        case version, inputs, outputs, lockTime = "lock_time", subnetworkID = "subnetwork_id", gas, payload, spent
    }

    /// An empty payload is left out of the JSON: a push carries the payload once, as
    /// `kasia.payload`, and the reader puts it back (`payload` absent reads as empty).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(UInt16.self, forKey: .version)
        inputs = try c.decode([Input].self, forKey: .inputs)
        outputs = try c.decode([Output].self, forKey: .outputs)
        lockTime = try c.decode(UInt64.self, forKey: .lockTime)
        subnetworkID = try c.decode(HexBytes.self, forKey: .subnetworkID)
        gas = try c.decode(UInt64.self, forKey: .gas)
        payload = try c.decodeIfPresent(HexBytes.self, forKey: .payload) ?? HexBytes([])
        spent = try c.decode(Output.self, forKey: .spent)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(version, forKey: .version)
        try c.encode(inputs, forKey: .inputs)
        try c.encode(outputs, forKey: .outputs)
        try c.encode(lockTime, forKey: .lockTime)
        try c.encode(subnetworkID, forKey: .subnetworkID)
        try c.encode(gas, forKey: .gas)
        if !payload.bytes.isEmpty { try c.encode(payload, forKey: .payload) }
        try c.encode(spent, forKey: .spent)
    }

    /// The x-only public key the spent output pays when it is a Schnorr pay-to-public-key script
    /// (`OP_DATA_32 <key> OP_CHECKSIG`, script version 0): the only key a Kasia sender signs with.
    public var spentKey: [UInt8]? { Self.schnorrKey(script: spent.script.bytes, version: spent.scriptVersion) }

    /// The key of a Schnorr pay-to-public-key script, or nil for any other script.
    public static func schnorrKey(script: [UInt8], version: UInt16) -> [UInt8]? {
        guard version == 0, script.count == 34, script[0] == 0x20, script[33] == 0xAC else { return nil }
        return Array(script[1..<33])
    }

    /// The address the spent output pays on the network of `prefix` (nil when it is not a Schnorr key's).
    public func spentAddress(prefix: KaspaAddress.Prefix) -> KaspaAddress? {
        spentKey.flatMap { try? KaspaAddress(prefix: prefix, version: .publicKey, payload: $0) }
    }
}

/// Bytes that travel in JSON as a hex string.
public struct HexBytes: Hashable, Sendable, Codable {
    public var bytes: [UInt8]

    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let bytes = Hex.decode(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "is a hex string"))
        }
        self.bytes = bytes
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Hex.encode(bytes))
    }
}
