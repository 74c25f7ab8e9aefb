import Foundation

/// Reads a `getVirtualChainFromBlockV2` answer for the coins a few transactions spend, without
/// decoding the rest: the answer carries every transaction the chain blocks accepted, at full
/// verbosity, and only the few Herald asked about are decoded.
enum SpentCoinsScanner {
    /// The UTXO entries the inputs of `transactions` (ids) spend, by outpoint, as the node gave
    /// them in the inputs' verbose data. Nil when the frame is not shaped as an answer of that call.
    static func coins(in data: Data, spentBy transactions: Set<String>) -> [RpcOutpoint: RpcUtxoEntry]? {
        struct Inputs: Decodable { var inputs: [RpcTransactionInput] }
        return data.withUnsafeBytes { raw -> [RpcOutpoint: RpcUtxoEntry]? in
            var reader = JSONBytes(raw)
            var coins: [RpcOutpoint: RpcUtxoEntry] = [:]
            var found = false
            let decoder = JSONDecoder()
            let ok = reader.object { key, reader in
                guard key == "params" else { return reader.skipValue() }
                return reader.object { key, reader in
                    guard key == "chainBlockAcceptedTransactions" else { return reader.skipValue() }
                    found = true
                    return reader.array { reader in
                        reader.object { key, reader in
                            guard key == "acceptedTransactions" else { return reader.skipValue() }
                            return reader.array { reader in
                                guard let range = reader.valueRange() else { return false }
                                guard let id = transactionID(JSONBytes(reader.base, range: range)), transactions.contains(id) else { return true }
                                // One transaction decoded whole; one the node shaped otherwise gives no coins.
                                for input in (try? decoder.decode(Inputs.self, from: data[range]))?.inputs ?? [] {
                                    if let entry = input.utxoEntry { coins[input.previousOutpoint] = entry }
                                }
                                return true
                            }
                        }
                    }
                }
            }
            return ok && found ? coins : nil
        }
    }

    /// A transaction's `verboseData.transactionId`, its other members skipped.
    private static func transactionID(_ reader: JSONBytes) -> String? {
        var reader = reader
        var id: String?
        let ok = reader.object { key, reader in
            guard key == "verboseData", !reader.isNull else { return reader.skipValue() }
            return reader.object { key, reader in
                guard key == "transactionId" else { return reader.skipValue() }
                return reader.string(into: &id)
            }
        }
        return ok ? id : nil
    }
}
