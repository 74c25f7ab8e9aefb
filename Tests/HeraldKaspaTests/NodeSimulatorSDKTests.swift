import Foundation
import Synchronization
import HeraldTestSupport
import KaspaNodeSimulator
import Testing

/// The node simulator is held to the real node's frames: the official Kaspa Python SDK
/// (`RpcClient`, JSON encoding) connects to it, subscribes, and decodes its notifications.
@Suite struct NodeSimulatorSDKTests {
    @Test("the official SDK subscribes to the simulator and decodes BlockAdded, VirtualChainChanged and its answers")
    func sdkDecodesTheSimulator() async throws {
        let fixtures = try RawFixtures.load()
        let node = try await KaspaNodeSimulator.start()
        // A chain block before the one the SDK sees (its selected parent), carrying the transfer
        // that paid the coin the message spends.
        await node.produce([fixtures.funding])
        let message = fixtures.cases["contextual_message"]!
        let txid = RawFixtures.txid(message)

        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/sdk_client.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, node.url, txid]
        let out = Pipe()
        let errors = Pipe()
        process.standardOutput = out
        process.standardError = errors
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // The client bounds itself (150 s); past 240 s it is killed here, so a read of its output
        // ends and the test fails with its errors instead of holding the run.
        let killed = Mutex(false)
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + 240) {
            guard process.isRunning else { return }
            killed.withLock { $0 = true }
            kill(pid, SIGKILL)
        }

        // The pipes are read off the task pool: the SDK talks to the simulator, which needs it.
        let (output, errorOutput) = (out.fileHandleForReading, errors.fileHandleForReading)
        var text = ""
        while !text.contains("subscribed\n") {
            let chunk = try await offPool { output.availableData }
            if chunk.isEmpty {
                let stderr = String(decoding: try await offPool { errorOutput.readDataToEndOfFile() }, as: UTF8.self)
                Issue.record("the SDK client exited before subscribing (pip install kaspa): \(stderr)")
                return
            }
            text += String(decoding: chunk, as: UTF8.self)
        }
        // The SDK sends its subscriptions from a task of its own: wait until both reached the node.
        for _ in 0..<600 where node.requests.filter({ $0 == "subscribe" }).count < 2 {
            try await Task.sleep(for: .milliseconds(50))
        }
        let block = await node.produce([message], senders: [txid: fixtures.alice])
        text += String(decoding: try await offPool { output.readDataToEndOfFile() }, as: UTF8.self)
        process.waitUntilExit()
        if killed.withLock({ $0 }) { Issue.record("the SDK client was still running after 240 s, and was killed") }
        if process.terminationStatus != 0 {
            Issue.record("the SDK client failed: \(String(decoding: try await offPool { errorOutput.readDataToEndOfFile() }, as: UTF8.self))")
        }
        let line = try #require(text.split(separator: "\n").last)
        let result = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])

        // The SDK also reports its own connect/disconnect events.
        #expect(Set(result["event_types"] as? [String] ?? []).isSuperset(of: ["BlockAdded", "VirtualChainChanged"]))
        #expect(result["block_added_txids"] as? [String] == [txid])
        #expect(result["block_added_payloads"] as? [String] == [message["payload"] as! String])
        #expect((result["block_added_daa_scores"] as? [NSNumber])?.map(\.uint64Value) == [node.daaScore(ofBlock: block)!])
        #expect(result["chain_added"] as? [String] == [block])
        #expect(result["chain_accepted"] as? [String] == [txid])
        #expect(result["get_block_txids"] as? [String] == [txid])
        #expect(result["return_address"] as? String == fixtures.alice)
        #expect(result["server_version"] as? String == "1.1.0-simulator")
        #expect(node.requests.filter { $0 == "subscribe" }.count == 2)
        #expect(result["dag_sink"] as? String == block)
        #expect(result["dag_pruning_point"] as? String == String(repeating: "0", count: 64))
        #expect(result["dag_network"] as? String == "mainnet")
        #expect(result["virtual_chain_added"] as? [String] == [block])
        // V2: the accepted transaction with the coin its input spends, as the SDK decodes it.
        let funding = (fixtures.funding["outputs"] as! [[String: Any]])[Int(((message["inputs"] as! [[String: Any]])[0]["previousOutpoint"] as! [String: Any])["index"] as! Int)]
        #expect(result["v2_added"] as? [String] == [block])
        #expect(result["v2_txids"] as? [String] == [txid])
        #expect((result["v2_spent_amount"] as? NSNumber)?.uint64Value == (funding["value"] as? NSNumber)?.uint64Value)
        #expect("\(result["v2_spent_script"] ?? "")".contains(String((funding["scriptPublicKey"] as! String).dropFirst(4))))
        #expect(result["v2_spent_address"] as? String == fixtures.alice)
        #expect(Set(node.requests) == [
            "subscribe", "getServerInfo", "getBlock", "getUtxoReturnAddress", "getBlockDagInfo", "getVirtualChainFromBlock",
            "getVirtualChainFromBlockV2",
        ])
        await node.shutdown()
    }
}
