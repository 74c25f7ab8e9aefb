// Test helper: `SharedStoreWriter DIR PREFIX COUNT` records COUNT decrypted messages
// (txIDs PREFIX-0 … PREFIX-COUNT-1) into the HeraldKit shared store in DIR, one write each.
import Foundation
import HeraldKit

let arguments = CommandLine.arguments
guard arguments.count == 4, let count = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: SharedStoreWriter DIR PREFIX COUNT\n".utf8))
    exit(2)
}
let store = try SharedStore(directory: URL(fileURLWithPath: arguments[1]), limits: .init(maximumMessages: 100_000, maximumPendingFetches: 100_000))
for i in 0..<count {
    let txID = "\(arguments[2])-\(i)"
    if i % 2 == 0 {
        try store.record(.message(StoredMessage(txID: txID, sender: "kaspa:x", kind: "contextual_message", plaintext: "message \(i)", timestamp: Int64(i))))
    } else {
        try store.record(.pendingFetch(PendingFetch(txID: txID, sender: "kaspa:x", kind: "payment", timestamp: Int64(i))))
    }
}
