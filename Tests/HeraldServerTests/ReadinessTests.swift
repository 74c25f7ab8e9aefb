import Foundation
import HeraldAPNsSimulator
import HeraldDelivery
@testable import HeraldServer
import HeraldStore
import Hummingbird
import NIOPosix
import HummingbirdTesting
import Synchronization
import Testing

@Suite("Readiness")
struct ReadinessTests {
    @Test("/readyz: 200 naming what it checked while the store answers and every check holds; 503 in the envelope naming each failure")
    func readiness() async throws {
        let simulatorUp = Atomic<Bool>(true)
        try await withRegistrationServer(
            readiness: [ReadinessCheck("built-in APNs simulator listening") { simulatorUp.load(ordering: .relaxed) }],
            sending: ["default": ["ios": "simulator"]]
        ) { client, store in
            let ready = try await send(client, .get, "/readyz")
            #expect(ready.status == .ok)
            let body = try json(ready)
            #expect(body["checked"] as? [String] == ["store", "built-in APNs simulator listening"])
            #expect((body["apps"] as? [String: [String: String]])?["default"]?["ios"] == "simulator")

            simulatorUp.store(false, ordering: .relaxed)
            let down = try await send(client, .get, "/readyz")
            #expect(down.status == .serviceUnavailable)
            let error = try #require(try json(down)["error"] as? [String: Any])
            #expect(error["code"] as? String == "not_ready")
            #expect((error["message"] as? String)?.contains("built-in APNs simulator listening") == true)
            #expect((error["message"] as? String)?.contains("store") == false)

            // The database closed under the API: both named.
            try store.close()
            let message = try #require(try json(try await send(client, .get, "/readyz"))["error"] as? [String: Any])["message"] as? String
            #expect(message?.contains("store not reachable") == true && message?.contains("simulator") == true, "\(message ?? "")")
            simulatorUp.store(true, ordering: .relaxed)
            let storeOnly = try await send(client, .get, "/readyz")
            #expect(storeOnly.status == .serviceUnavailable)
        }
    }

    @Test("a simulator's readiness check: listening once started, not after it stopped")
    func simulatorListening() async throws {
        let simulator = try await APNsSimulator.start(configuration: APNsSimulatorConfiguration(), eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        #expect(simulator.isListening)
        await simulator.shutdown()
        #expect(!simulator.isListening)
    }
}
