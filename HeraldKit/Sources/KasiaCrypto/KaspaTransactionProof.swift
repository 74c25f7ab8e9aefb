public import KasiaProtocol

extension KaspaTransactionProof {
    /// Why a proof does not prove its sender.
    public enum Failure: Error, Hashable, Sendable {
        /// Not a Schnorr (P2PK) address: nothing to verify against.
        case notASchnorrAddress
        /// The transaction has no input, or its fields are not the sizes Kaspa's are.
        case malformed
        /// Input 0's signature script is not one 65-byte push (signature and SigHashAll).
        case unsupportedSignatureScript
        /// The spent output is not the claimed address's pay-to-public-key script.
        case spentOutputNotTheSender
        /// The signature does not sign this transaction for that key.
        case badSignature
        /// The proven transaction is not the one the push names (its id is another `txId`).
        case otherTransaction
        /// The push says another kind (message, handshake, payment) than the transaction's payload.
        case otherKind
        /// A handshake or payment that pays none of the device's own addresses, or a message whose
        /// alias is none of the sender's conversations with the device.
        case notToThisDevice
        /// A payment's amount is not what the transaction pays the device.
        case otherAmount
    }

    /// Kaspa's sighash type for "all inputs and outputs", the only one Kasia wallets sign with.
    public static let sigHashAll: UInt8 = 0x01
    static let hashKey = Array("TransactionSigningHash".utf8)
    static let idKey = Array("TransactionID".utf8)

    /// The transaction's id, as nodes and explorers name it (rusty-kaspa's `tx.id()` for a
    /// transaction that is not a coinbase): BLAKE2b-256 keyed `TransactionID` over the
    /// transaction with its signature scripts (and their sig-op counts) left out.
    public func transactionID() -> [UInt8] {
        var writer = Writer()
        writer.u16(version)
        writer.u64(UInt64(inputs.count))
        for input in inputs {
            writer.bytes(input.transactionID.bytes)
            writer.u32(input.index)
            writer.varBytes([])
            writer.u64(input.sequence)
        }
        writer.u64(UInt64(outputs.count))
        for output in outputs {
            writer.u64(output.value)
            writer.u16(output.scriptVersion)
            writer.varBytes(output.script.bytes)
        }
        writer.u64(lockTime)
        writer.bytes(subnetworkID.bytes)
        writer.u64(gas)
        writer.varBytes(payload.bytes)
        return Blake2b.hash(writer.data, key: Self.idKey, outputLength: 32)
    }

    /// What the transaction pays `address` (its pay-to-public-key outputs), in sompi; nil when
    /// it pays it nothing. Saturates rather than overflows.
    public func paid(to address: KaspaAddress) -> UInt64? {
        guard address.version == .publicKey else { return nil }
        let script = [0x20] + address.payload + [0xAC]
        let values = outputs.filter { $0.scriptVersion == 0 && $0.script.bytes == script }.map(\.value)
        guard !values.isEmpty else { return nil }
        return values.reduce(0 as UInt64) { $0.addingReportingOverflow($1).overflow ? .max : $0 + $1 }
    }

    /// Checks that input 0 was signed by `sender`'s key over this whole transaction (Kaspa's
    /// Schnorr signature hash, SigHashAll), and that the coin it spends is `sender`'s.
    /// - Throws: `Failure` saying why not.
    public func verify(sender: KaspaAddress, verifier: any SchnorrVerifier) throws(Failure) {
        guard sender.version == .publicKey, sender.payload.count == 32 else { throw .notASchnorrAddress }
        guard let first = inputs.first, subnetworkID.bytes.count == 20, inputs.allSatisfy({ $0.transactionID.bytes.count == 32 }) else {
            throw .malformed
        }
        let script = first.signatureScript.bytes
        guard script.count == 66, script[0] == 0x41, script[65] == Self.sigHashAll else { throw .unsupportedSignatureScript }
        guard spent.scriptVersion == 0, spent.script.bytes == [0x20] + sender.payload + [0xAC] else { throw .spentOutputNotTheSender }
        guard verifier.verifySchnorr(signature: Array(script[1..<65]), message32: try signatureHash(), publicKey: sender.payload) else {
            throw .badSignature
        }
    }

    /// Kaspa's Schnorr signature hash of input 0 with SigHashAll (rusty-kaspa's
    /// `calc_schnorr_signature_hash`): BLAKE2b-256 keyed `TransactionSigningHash`, integers
    /// little-endian, variable bytes as a u64 length and the bytes.
    /// - Throws: `Failure.malformed` for a transaction without inputs.
    public func signatureHash() throws(Failure) -> [UInt8] {
        guard let first = inputs.first else { throw .malformed }
        var writer = Writer()
        writer.u16(version)
        writer.bytes(Self.hash { w in for input in inputs { w.bytes(input.transactionID.bytes); w.u32(input.index) } })
        writer.bytes(Self.hash { w in for input in inputs { w.u64(input.sequence) } })
        writer.bytes(Self.hash { w in for input in inputs { w.u8(input.sigOpCount) } })
        writer.bytes(first.transactionID.bytes)
        writer.u32(first.index)
        writer.u16(spent.scriptVersion)
        writer.varBytes(spent.script.bytes)
        writer.u64(spent.value)
        writer.u64(first.sequence)
        writer.u8(first.sigOpCount)
        writer.bytes(Self.hash { w in for output in outputs { w.u64(output.value); w.u16(output.scriptVersion); w.varBytes(output.script.bytes) } })
        writer.u64(lockTime)
        writer.bytes(subnetworkID.bytes)
        writer.u64(gas)
        // An empty payload hashes as 32 zero bytes; any other as the hash of its var bytes.
        writer.bytes(payload.bytes.isEmpty ? [UInt8](repeating: 0, count: 32) : Self.hash { $0.varBytes(payload.bytes) })
        writer.u8(Self.sigHashAll)
        return Blake2b.hash(writer.data, key: Self.hashKey, outputLength: 32)
    }

    private static func hash(_ write: (inout Writer) -> Void) -> [UInt8] {
        var writer = Writer()
        write(&writer)
        return Blake2b.hash(writer.data, key: hashKey, outputLength: 32)
    }

    /// Little-endian integers and length-prefixed bytes, as Kaspa's hashers take them.
    struct Writer {
        var data: [UInt8] = []
        mutating func u8(_ value: UInt8) { data.append(value) }
        mutating func u16(_ value: UInt16) { little(UInt64(value), 2) }
        mutating func u32(_ value: UInt32) { little(UInt64(value), 4) }
        mutating func u64(_ value: UInt64) { little(value, 8) }
        mutating func bytes(_ bytes: [UInt8]) { data += bytes }
        mutating func varBytes(_ bytes: [UInt8]) { u64(UInt64(bytes.count)); data += bytes }
        private mutating func little(_ value: UInt64, _ count: Int) {
            for i in 0..<count { data.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i)))) }
        }
    }
}
