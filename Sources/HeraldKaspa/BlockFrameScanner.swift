import Foundation

/// Reads a `blockAddedNotification` frame without decoding every transaction: a block is
/// hundreds of transactions and nearly all are not Kasia. It walks the JSON bytes once,
/// decodes the header, the block's verbose data and the Kasia transactions with `JSONDecoder`,
/// and keeps only the id of the others. Nil when the frame is not shaped as expected (the caller
/// then decodes it whole).
enum BlockFrameScanner {
    static func block(from data: Data) -> RpcBlock? {
        data.withUnsafeBytes { raw -> RpcBlock? in
            var reader = JSONBytes(raw)
            var block: RpcBlock?
            let ok = reader.object { key, reader in
                switch key {
                case "params": break
                // An answer (an id), or another notification named before its params: not a
                // block, so its params (a V2 answer runs to megabytes) are not walked here.
                case "id": return reader.isNull && reader.skipValue()
                case "method":
                    var method: String?
                    return reader.string(into: &method) && method == "blockAddedNotification"
                default: return reader.skipValue()
                }
                return reader.object { key, reader in
                    guard key == "BlockAdded" else { return reader.skipValue() }
                    return reader.object { key, reader in
                        guard key == "block" else { return reader.skipValue() }
                        block = scanBlock(&reader, data: data)
                        return block != nil
                    }
                }
            }
            return ok ? block : nil
        }
    }

    private static func scanBlock(_ reader: inout JSONBytes, data: Data) -> RpcBlock? {
        let decoder = JSONDecoder()
        var header: RpcBlockHeader?
        var verbose: RpcBlockVerboseData?
        var transactions: [RpcTransaction] = []
        let ok = reader.object { key, reader in
            switch key {
            case "header":
                guard let range = reader.valueRange() else { return false }
                header = try? decoder.decode(RpcBlockHeader.self, from: data[range])
                return header != nil
            case "verboseData":
                guard let range = reader.valueRange() else { return false }
                verbose = try? decoder.decode(RpcBlockVerboseData?.self, from: data[range]) ?? nil
                return true
            case "transactions":
                return reader.array { reader in
                    guard let transaction = scanTransaction(&reader, data: data, decoder: decoder) else { return false }
                    transactions.append(transaction)
                    return true
                }
            default:
                return reader.skipValue()
            }
        }
        guard ok, let header else { return nil }
        return RpcBlock(header: header, transactions: transactions, verboseData: verbose)
    }

    /// A transaction: a Kasia one with its inputs and outputs, any other reduced to its id and
    /// block fields (the same as `RpcTransaction`'s decoder keeps).
    private static func scanTransaction(_ reader: inout JSONBytes, data: Data, decoder: JSONDecoder) -> RpcTransaction? {
        guard let range = reader.valueRange() else { return nil }
        var inner = JSONBytes(reader.base, range: range)
        var payloadRange: Range<Int>?
        var inputsRange: Range<Int>?
        var outputsRange: Range<Int>?
        var id: String?
        var blockHash: String?
        var blockTime: UInt64?
        // Signed fields a sender proof needs, read only for a Kasia transaction (found by its
        // payload, which may come after them): their ranges, not their values.
        var versionRange, lockTimeRange, gasRange, subnetworkRange: Range<Int>?
        let ok = inner.object { key, inner in
            switch key {
            case "version": versionRange = inner.valueRange(); return versionRange != nil
            case "lockTime": lockTimeRange = inner.valueRange(); return lockTimeRange != nil
            case "gas": gasRange = inner.valueRange(); return gasRange != nil
            case "subnetworkId": subnetworkRange = inner.valueRange(); return subnetworkRange != nil
            case "payload":
                payloadRange = inner.stringRange()
                return payloadRange != nil
            case "inputs":
                inputsRange = inner.valueRange()
                return inputsRange != nil
            case "outputs":
                outputsRange = inner.valueRange()
                return outputsRange != nil
            case "verboseData":
                guard !inner.isNull else { return inner.skipValue() }
                return inner.object { key, inner in
                    switch key {
                    case "transactionId": return inner.string(into: &id)
                    case "blockHash": return inner.string(into: &blockHash)
                    case "blockTime": return inner.unsigned(into: &blockTime)
                    default: return inner.skipValue()
                    }
                }
            default:
                return inner.skipValue()
            }
        }
        guard ok, let payloadRange else { return nil }
        let verboseData = id.map { RpcTransactionVerboseData(transactionId: $0, blockHash: blockHash, blockTime: blockTime) }
        let payload = String(decoding: inner.bytes(payloadRange), as: UTF8.self)
        guard payload.utf8.starts(with: kasiaPrefix) else {
            return RpcTransaction(inputs: [], outputs: [], payload: payload, verboseData: verboseData)
        }
        guard let inputsRange, let outputsRange else { return nil }
        var inputs: [RpcTransactionInput] = []
        var outputs: [RpcTransactionOutput] = []
        var list = JSONBytes(reader.base, range: inputsRange)
        let inputsOK = list.array { list in
            var outpoint: RpcOutpoint?
            var signatureScript: String?
            var sequence: UInt64?
            var sigOpCount: UInt64?
            var utxoEntry: RpcUtxoEntry?
            let ok = list.object { key, list in
                switch key {
                case "signatureScript":
                    guard !list.isNull else { return list.skipValue() }
                    return list.string(into: &signatureScript)
                case "sequence": return list.optionalUnsigned(into: &sequence)
                case "sigOpCount": return list.optionalUnsigned(into: &sigOpCount)
                case "verboseData":
                    // Rare (newer nodes' verbose levels): decoded whole.
                    guard !list.isNull else { return list.skipValue() }
                    guard let range = list.valueRange() else { return false }
                    utxoEntry = (try? decoder.decode(InputVerboseData.self, from: data[range]))?.utxoEntry
                    return true
                case "previousOutpoint": break
                default: return list.skipValue()
                }
                var txid: String?
                var index: UInt64?
                let ok = list.object { key, list in
                    switch key {
                    case "transactionId": return list.string(into: &txid)
                    case "index": return list.unsigned(into: &index)
                    default: return list.skipValue()
                    }
                }
                if let txid, let index, let index32 = UInt32(exactly: index) { outpoint = RpcOutpoint(transactionId: txid, index: index32) }
                return ok
            }
            guard ok, let outpoint else { return false }
            inputs.append(RpcTransactionInput(
                previousOutpoint: outpoint, signatureScript: signatureScript, sequence: sequence, sigOpCount: sigOpCount.flatMap(UInt8.init(exactly:)),
                utxoEntry: utxoEntry))
            return true
        }
        list = JSONBytes(reader.base, range: outputsRange)
        let outputsOK = list.array { list in
            var value: UInt64?
            var script: String?
            var type: String?
            var address: String?
            let ok = list.object { key, list in
                switch key {
                case "value": return list.unsigned(into: &value)
                case "scriptPublicKey": return list.string(into: &script)
                case "verboseData":
                    guard !list.isNull else { return list.skipValue() }
                    return list.object { key, list in
                        switch key {
                        case "scriptPublicKeyType": return list.string(into: &type)
                        case "scriptPublicKeyAddress": return list.string(into: &address)
                        default: return list.skipValue()
                        }
                    }
                default: return list.skipValue()
                }
            }
            guard ok, let value, let script else { return false }
            let verbose = (type != nil || address != nil)
                ? RpcTransactionOutputVerboseData(scriptPublicKeyType: type, scriptPublicKeyAddress: address) : nil
            outputs.append(RpcTransactionOutput(value: value, scriptPublicKey: script, verboseData: verbose))
            return true
        }
        guard inputsOK, outputsOK else { return nil }
        var transaction = RpcTransaction(inputs: inputs, outputs: outputs, payload: payload, verboseData: verboseData)
        // Any other value than the node's (a number, a hex string) leaves the field nil: no proof, still the event.
        func number(_ range: Range<Int>?) -> UInt64? {
            guard let range else { return nil }
            var field = JSONBytes(reader.base, range: range)
            var value: UInt64?
            return field.unsigned(into: &value) ? value : nil
        }
        transaction.version = number(versionRange).flatMap(UInt16.init(exactly:))
        transaction.lockTime = number(lockTimeRange)
        transaction.gas = number(gasRange)
        if let range = subnetworkRange {
            var field = JSONBytes(reader.base, range: range)
            var text: String?
            if !field.isNull, field.string(into: &text) { transaction.subnetworkId = text }
        }
        return transaction
    }

    /// An input's verbose data: the UTXO entry it spends, when the node gives it.
    private struct InputVerboseData: Decodable { var utxoEntry: RpcUtxoEntry? }

    /// `RpcTransaction.isKasia`, on the payload's bytes.
    static let kasiaPrefix = Array(RpcTransaction.kasiaPrefixHex.utf8)
}

/// A forward-only walk over JSON bytes: enough structure to find values and skip the rest.
struct JSONBytes {
    let base: UnsafeRawBufferPointer
    var i: Int
    let end: Int

    init(_ base: UnsafeRawBufferPointer) {
        self.base = base
        i = 0
        end = base.count
    }

    init(_ base: UnsafeRawBufferPointer, range: Range<Int>) {
        self.base = base
        i = range.lowerBound
        end = range.upperBound
    }

    func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer.SubSequence { base[range] }

    mutating func skipSpace() {
        while i < end, base[i] == 0x20 || base[i] == 0x0A || base[i] == 0x0D || base[i] == 0x09 { i += 1 }
    }

    /// `{ "key": value, … }`: calls `body` with each key, positioned at its value; `body` must
    /// consume the value and return false to stop.
    mutating func object(_ body: (String, inout JSONBytes) -> Bool) -> Bool {
        skipSpace()
        guard i < end, base[i] == UInt8(ascii: "{") else { return false }
        i += 1
        skipSpace()
        if i < end, base[i] == UInt8(ascii: "}") {
            i += 1
            return true
        }
        while true {
            guard let keyRange = stringRange() else { return false }
            let key = String(decoding: base[keyRange], as: UTF8.self)
            skipSpace()
            guard i < end, base[i] == UInt8(ascii: ":") else { return false }
            i += 1
            guard body(key, &self) else { return false }
            skipSpace()
            guard i < end else { return false }
            if base[i] == UInt8(ascii: ",") {
                i += 1
                skipSpace()
                continue
            }
            guard base[i] == UInt8(ascii: "}") else { return false }
            i += 1
            return true
        }
    }

    /// `[ value, … ]`: calls `body` positioned at each value.
    mutating func array(_ body: (inout JSONBytes) -> Bool) -> Bool {
        skipSpace()
        guard i < end, base[i] == UInt8(ascii: "[") else { return false }
        i += 1
        skipSpace()
        if i < end, base[i] == UInt8(ascii: "]") {
            i += 1
            return true
        }
        while true {
            guard body(&self) else { return false }
            skipSpace()
            guard i < end else { return false }
            if base[i] == UInt8(ascii: ",") {
                i += 1
                continue
            }
            guard base[i] == UInt8(ascii: "]") else { return false }
            i += 1
            return true
        }
    }

    /// A string's contents (without quotes, escapes left as they are); the cursor moves past it.
    mutating func stringRange() -> Range<Int>? {
        skipSpace()
        guard i < end, base[i] == UInt8(ascii: "\"") else { return nil }
        i += 1
        let start = i
        guard let pointer = base.baseAddress else { return nil }
        // Strings here are mostly long hex: jump from quote to quote, then rule out an escaped one.
        while i < end {
            guard let found = memchr(pointer + i, Int32(UInt8(ascii: "\"")), end - i) else { return nil }
            let quote = pointer.distance(to: UnsafeRawPointer(found))
            var backslashes = 0
            while quote - 1 - backslashes >= start, base[quote - 1 - backslashes] == UInt8(ascii: "\\") { backslashes += 1 }
            i = quote + 1
            if backslashes % 2 == 0 { return start..<quote }
        }
        return nil
    }

    /// Whether the next value is `null`.
    var isNull: Bool {
        var probe = self
        probe.skipSpace()
        return probe.i < probe.end && probe.base[probe.i] == UInt8(ascii: "n")
    }

    /// Reads a string without escapes (ids, hex, addresses); false on anything else.
    mutating func string(into target: inout String?) -> Bool {
        guard let range = stringRange(), !base[range].contains(UInt8(ascii: "\\")) else { return false }
        target = String(decoding: base[range], as: UTF8.self)
        return true
    }

    /// Reads a non-negative integer exactly; false on anything else.
    mutating func unsigned(into target: inout UInt64?) -> Bool {
        guard let range = valueRange(), let value = unsigned(range) else { return false }
        target = value
        return true
    }

    /// Reads a non-negative integer exactly, leaving `target` nil for any other value (a field
    /// only some transactions need); false only for malformed JSON.
    mutating func optionalUnsigned(into target: inout UInt64?) -> Bool {
        guard let range = valueRange() else { return false }
        target = unsigned(range)
        return true
    }

    private func unsigned(_ range: Range<Int>) -> UInt64? {
        var value: UInt64 = 0
        for byte in base[range] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !o1, !o2 else { return nil }
            value = sum
        }
        return range.isEmpty ? nil : value
    }

    /// The byte range of the next value; the cursor moves past it.
    mutating func valueRange() -> Range<Int>? {
        skipSpace()
        let start = i
        guard skipValue() else { return nil }
        return start..<i
    }

    /// Skips one value of any kind.
    mutating func skipValue() -> Bool {
        skipSpace()
        guard i < end else { return false }
        switch base[i] {
        case UInt8(ascii: "\""):
            return stringRange() != nil
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            while i < end {
                let c = base[i]
                if c == UInt8(ascii: "\"") {
                    guard stringRange() != nil else { return false }
                    continue
                }
                if c == UInt8(ascii: "{") || c == UInt8(ascii: "[") { depth += 1 }
                if c == UInt8(ascii: "}") || c == UInt8(ascii: "]") {
                    depth -= 1
                    if depth == 0 {
                        i += 1
                        return true
                    }
                }
                i += 1
            }
            return false
        default:
            // A number, true, false or null: up to the next delimiter.
            let start = i
            while i < end, base[i] != UInt8(ascii: ","), base[i] != UInt8(ascii: "}"), base[i] != UInt8(ascii: "]"),
                base[i] != 0x20, base[i] != 0x0A, base[i] != 0x0D, base[i] != 0x09
            {
                i += 1
            }
            return i > start
        }
    }
}
