import Foundation
@testable import HeraldAPNs
import HeraldAPNsCore
import HeraldAPNsSimulator
import HeraldPushCore
import HeraldTestSupport
import NIOCore
import Testing

/// The provider against the simulator over real TLS and HTTP/2 sockets on 127.0.0.1.
@Suite("APNs delivery over TLS + HTTP/2", .serialized)
struct DeliveryIntegrationTests {
    @Test("an accepted push arrives with its exact headers and payload")
    func accepted() async throws {
        try await SimulatorFixture.with { f in
            let client = try f.makeClient()
            var n = alert(deviceToken(1), collapseID: "tx-1")
            n.expiration = 1_900_000_000
            let result = try await client.send(n)
            #expect(result == .accepted(apnsID: n.apnsID))
            let got = try #require(f.simulator.notifications(token: deviceToken(1)).first)
            #expect(got.apnsID == n.apnsID.uuidString.lowercased())
            #expect(got.topic == SimulatorFixture.topic)
            #expect(got.pushType == "alert")
            #expect(got.priority == 10)
            #expect(got.expiration == 1_900_000_000)
            #expect(got.collapseID == "tx-1")
            #expect(got.keyID == f.key.keyID)
            #expect(got.payload == #"{"aps":{"alert":{"title":"Hello","body":"World"}}}"#)
            await client.shutdown()
        }
    }

    /// Each row of the table of docs/apns.md, produced by the simulator's fault injection.
    @Test("every row of the table of docs/apns.md gets its classification", arguments: [
        (SimulatorFault(kind: .badToken), APNsAction.tokenDead(since: nil)),
        (SimulatorFault(kind: .respond, status: 400, reason: "DeviceTokenNotForTopic"), .tokenDead(since: nil)),
        (SimulatorFault(kind: .unregistered, timestampMs: 1_700_000_123_000), .tokenDead(since: Date(timeIntervalSince1970: 1_700_000_123))),
        (SimulatorFault(kind: .respond, status: 410, reason: "ExpiredToken", timestampMs: 1_700_000_000_000), .tokenDead(since: Date(timeIntervalSince1970: 1_700_000_000))),
        (SimulatorFault(kind: .respond, status: 403, reason: "ExpiredProviderToken"), .refreshCredentials),
        (SimulatorFault(kind: .respond, status: 403, reason: "InvalidProviderToken"), .refreshCredentials),
        (SimulatorFault(kind: .respond, status: 413, reason: "PayloadTooLarge"), .shrinkPayload),
        (SimulatorFault(kind: .respond, status: 429, reason: "TooManyRequests", retryAfter: 30), .retry(after: .seconds(30), scope: .token)),
        (SimulatorFault(kind: .respond, status: 429, reason: "TooManyProviderTokenUpdates"), .retry(after: nil, scope: .providerToken)),
        (SimulatorFault(kind: .respond, status: 500, reason: "InternalServerError"), .retry(after: nil, scope: .server)),
        (SimulatorFault(kind: .respond, status: 503, reason: "ServiceUnavailable"), .retry(after: nil, scope: .server)),
        (SimulatorFault(kind: .respond, status: 400, reason: "TopicDisallowed"), .fail(reason: "TopicDisallowed")),
    ])
    func tableRow(fault: SimulatorFault, expected: APNsAction) async throws {
        try await SimulatorFixture.with { f in
            var fault = fault
            fault.token = deviceToken(7)
            try f.simulator.inject(fault)
            let client = try f.makeClient()
            let result = try await client.send(alert(deviceToken(7)))
            #expect(result.action == expected, "\(result)")
            // The fault was for that token only: another token still gets through.
            #expect(try await client.send(alert(deviceToken(8))).action == .done)
            await client.shutdown()
        }
    }

    @Test("a 403 provider-token refusal mints a new JWT and retries once when the 20-minute floor allows")
    func refreshAndRetryOnce() async throws {
        try await SimulatorFixture.with { f in
            let clock = ManualClock(now: Date())
            let tokens = APNsProviderTokenSource(key: f.key, now: clock.now)
            let client = try f.makeClient(connections: 1, tokens: tokens)
            #expect(try await client.send(alert(deviceToken(1))).action == .done)
            // 21 minutes on, APNs refuses the token: a new one is minted and the push retried once.
            clock.advance(by: 21 * 60)
            try f.simulator.inject(SimulatorFault(kind: .respond, status: 403, reason: "ExpiredProviderToken", count: 1))
            #expect(try await client.send(alert(deviceToken(2))).action == .done)
            #expect(tokens.mintedCount == 2)
            // Refused again at once: the 20-minute floor forbids a new token; the refusal goes back to the caller.
            try f.simulator.inject(SimulatorFault(kind: .respond, status: 403, reason: "ExpiredProviderToken", count: 1))
            #expect(try await client.send(alert(deviceToken(3))).action == .refreshCredentials)
            #expect(tokens.mintedCount == 2)
            // The pending refresh is honoured as soon as the floor allows.
            clock.advance(by: 21 * 60)
            #expect(try await client.send(alert(deviceToken(4))).action == .done)
            #expect(tokens.mintedCount == 3)
            // Refused twice: retried once only, then handed back.
            clock.advance(by: 21 * 60)
            try f.simulator.inject(SimulatorFault(kind: .respond, status: 403, reason: "InvalidProviderToken", count: 2))
            #expect(try await client.send(alert(deviceToken(5))).action == .refreshCredentials)
            #expect(tokens.mintedCount == 4)
            #expect(f.simulator.stats.reasons["InvalidProviderToken"] == 2)
            await client.shutdown()
        }
    }

    @Test("a batch goes out together, past the connections' stream limits: each result is its own notification's, and a refused provider token is refreshed once and its push sent again")
    func batch() async throws {
        try await SimulatorFixture.with { f in
            let clock = ManualClock(now: Date())
            let tokens = APNsProviderTokenSource(key: f.key, now: clock.now)
            // A request's deadline counts its wait in the queue, and the whole batch is queued at once:
            // a debug build on a busy 2-core machine takes several ms a push, so 1,500 need more than 10 s.
            let client = try f.makeClient(connections: 2, timeout: .seconds(120), tokens: tokens)
            #expect(try await client.send(alert(deviceToken(1_000))).action == .done)
            clock.advance(by: 21 * 60)
            try f.simulator.inject(SimulatorFault(kind: .unregistered, token: deviceToken(5), timestampMs: 1_700_000_000_000))
            try f.simulator.inject(SimulatorFault(kind: .badToken, token: deviceToken(9)))
            try f.simulator.inject(SimulatorFault(kind: .respond, status: 403, reason: "ExpiredProviderToken", count: 1))
            let batch = (0..<1_500).map { alert(deviceToken($0)) }
            let results = await client.sendValidated(batch)
            #expect(results.count == batch.count)
            for (n, result) in results.enumerated() {
                switch n {
                case 5: #expect(result.action == .tokenDead(since: Date(timeIntervalSince1970: 1_700_000_000)), "\(result)")
                case 9: #expect(result.action == .tokenDead(since: nil), "\(result)")
                default: #expect(result == .accepted(apnsID: batch[n].apnsID), "notification \(n): \(result)")
                }
            }
            #expect(tokens.mintedCount == 2)
            #expect(f.simulator.stats.reasons["ExpiredProviderToken"] == 1)
            for n in [0, 4, 6, 1_499] { #expect(f.simulator.notifications(token: deviceToken(n)).count == 1) }
            await client.shutdown()
        }
    }

    @Test("one JWT per key: 10,000 sends over 4 connections mint one token; 51 minutes later, one more")
    func oneTokenPerKey() async throws {
        try await SimulatorFixture.with { f in
            let clock = ManualClock(now: Date())
            let tokens = APNsProviderTokenSource(key: f.key, now: clock.now)
            // The subject is the token count, not deadlines: a loaded machine may hold a send past
            // the default 10 s (the full suite did), which would make it a retry.
            let client = try f.makeClient(connections: 4, timeout: .seconds(120), tokens: tokens)
            let batch = (0..<10_000).map { alert(deviceToken($0)) }
            let results = try await sendAll(client, batch, concurrency: 400)
            #expect(results.allSatisfy { $0.action == .done }, "\(results.filter { $0.action != .done }.prefix(3))")
            #expect(tokens.mintedCount == 1)
            #expect(f.simulator.stats.providerTokens[f.key.keyID] == 1)
            #expect(f.simulator.stats.connectionsOpened == 4)

            clock.advance(by: 51 * 60)
            let later = try await sendAll(client, (0..<1_000).map { alert(deviceToken($0)) }, concurrency: 100)
            #expect(later.allSatisfy { $0.action == .done })
            #expect(tokens.mintedCount == 2)
            #expect(f.simulator.stats.providerTokens[f.key.keyID] == 2)

            // Never two within 20 minutes, even when asked.
            clock.advance(by: 10 * 60)
            tokens.refreshRequested(after: await tokens.currentToken())
            _ = try await sendAll(client, (0..<100).map { alert(deviceToken($0)) })
            #expect(tokens.mintedCount == 2)
            #expect(f.simulator.stats.reasons["TooManyProviderTokenUpdates"] == nil)
            await client.shutdown()
        }
    }

    @Test("the live stream limit follows the server: 1 after a rejection, 1,000 after an acceptance")
    func liveStreamLimit() async throws {
        try await SimulatorFixture.with { f in
            let client = try f.makeClient(connections: 1)
            #expect(try await client.send(alert(deviceToken(1))).action == .done)
            #expect(client.connectionStats.maxStreams == [1_000])
            try f.simulator.inject(SimulatorFault(kind: .unregistered, token: deviceToken(2)))
            guard case .tokenDead = try await client.send(alert(deviceToken(2))).action else {
                Issue.record("expected a dead token")
                return
            }
            #expect(client.connectionStats.maxStreams == [1])
            #expect(try await client.send(alert(deviceToken(3))).action == .done)
            #expect(client.connectionStats.maxStreams == [1_000])
            await client.shutdown()
        }
    }

    @Test("with 1 dead token in every 10 the pool keeps sending: exact counts, no stall, no error storm")
    func deadTokensDoNotStall() async throws {
        try await SimulatorFixture.with { f in
            // Enough 410 bodies (~55 bytes each) to cross the connection-window threshold
            // several times: answers must survive the client's WINDOW_UPDATEs.
            let total = 8_000
            for i in stride(from: 0, to: total, by: 10) {
                try f.simulator.inject(SimulatorFault(kind: .unregistered, token: deviceToken(i), timestampMs: 1_700_000_000_000))
            }
            // A stall would end requests at their deadline as transport failures, which the exact
            // counts below catch; the deadline is generous so a loaded machine is not taken for one.
            let client = try f.makeClient(connections: 2, timeout: .seconds(120))
            let results = try await sendAll(client, (0..<total).map { alert(deviceToken($0)) }, concurrency: 500)
            let accepted = results.filter { $0.action == .done }.count
            let dead = results.filter { if case .tokenDead = $0.action { return true } else { return false } }.count
            #expect(accepted == total * 9 / 10)
            #expect(dead == total / 10)
            // Every request went exactly once: no retries, no transport failures.
            #expect(f.simulator.stats.streams == total)
            #expect(f.simulator.stats.accepted == total * 9 / 10)
            await client.shutdown()
        }
    }

    @Test("GOAWAY mid-burst: the connection drains and is replaced, and every push is accepted")
    func goAwayMidBurst() async throws {
        try await SimulatorFixture.with { f in
            try f.simulator.inject(SimulatorFault(kind: .goaway, afterStreams: 250, count: 3))
            let client = try f.makeClient(connections: 2, timeout: .seconds(10))
            let total = 2_000
            // A stalled drain would surface as timed-out requests (10 s each), never as a slow pass.
            let results = try await sendAll(client, (0..<total).map { alert(deviceToken($0)) }, concurrency: 400)
            let failed = results.filter { $0.action != .done }
            #expect(failed.isEmpty, "\(Dictionary(grouping: failed, by: { "\($0)" }).mapValues(\.count))")
            #expect(f.simulator.notifications().count == total)
            #expect(f.simulator.stats.connectionsOpened >= 4)
            await client.shutdown()
        }
    }

    @Test("connection reset mid-burst: every push ends accepted or classified retry within its deadline; the pool recovers")
    func resetMidBurst() async throws {
        try await SimulatorFixture.with { f in
            try f.simulator.inject(SimulatorFault(kind: .reset, afterStreams: 300, count: 2))
            let client = try f.makeClient(connections: 2, timeout: .seconds(5))
            let total = 2_000
            let results = try await sendAll(client, (0..<total).map { alert(deviceToken($0)) }, concurrency: 400)
            let accepted = results.filter { $0.action == .done }.count
            let retry = results.filter { $0.action == .retry(after: nil, scope: .server) }.count
            #expect(accepted + retry == total)
            #expect(retry > 0)
            // Some pushes APNs took just before the reset never got their answer: at-least-once.
            #expect(accepted <= f.simulator.stats.accepted)
            // After the storm, the pool works again on fresh connections.
            #expect(try await client.send(alert(deviceToken(99_999))).action == .done)
            await client.shutdown()
        }
    }

    @Test("a delayed server: requests past their deadline end as deadlineExceeded, never hang")
    func deadline() async throws {
        try await SimulatorFixture.with { f in
            try f.simulator.inject(SimulatorFault(kind: .delay, delayMs: 3_000))
            let client = try f.makeClient(connections: 1, timeout: .milliseconds(500))
            // Answered after 3 s, each push ends at its own 0.5 s deadline instead of waiting for the answer.
            let results = try await sendAll(client, (0..<20).map { alert(deviceToken($0)) })
            #expect(results.allSatisfy { $0 == .transportFailure(.deadlineExceeded) })
            await client.shutdown()
        }
    }

    @Test("PING finds a half-dead connection long before the request deadline, and the pool moves on")
    func pingDetectsStall() async throws {
        try await SimulatorFixture.with { f in
            try f.simulator.inject(SimulatorFault(kind: .stall, afterStreams: 3))
            var configuration = APNsClientConfiguration(environment: .sandbox, url: f.simulator.url, trustRootsPEMFile: f.caPath)
            configuration.connections = 1
            configuration.requestTimeout = .seconds(10)
            configuration.pingInterval = .milliseconds(200)
            configuration.pingTimeout = .milliseconds(300)
            let client = try APNsClient(
                configuration: configuration, tokens: APNsProviderTokenSource(key: f.key), eventLoopGroup: f.group)
            for i in 0..<2 { #expect(try await client.send(alert(deviceToken(i))).action == .done) }
            // The third stream stalls the connection: from then on no answer, no PING ACK. The
            // push caught on it fails as soon as PING finds the connection dead (not at its
            // 10-second deadline); the rest go out on a new connection.
            // (Closed by PING, the push fails as connectionClosed; at its deadline it would be deadlineExceeded.)
            var failures: [APNsResult] = []
            for i in 2..<6 {
                let result = try await client.send(alert(deviceToken(i)))
                if result.action != .done { failures.append(result) }
            }
            #expect(failures == [.transportFailure(.connectionClosed)])
            #expect(f.simulator.stats.connectionsOpened == 2)
            await client.shutdown()
        }
    }

    @Test("a connection that runs out of stream ids is retired and replaced without losing a push")
    func streamIDExhaustion() async throws {
        try await SimulatorFixture.with { f in
            var configuration = APNsClientConfiguration(environment: .sandbox, url: f.simulator.url, trustRootsPEMFile: f.caPath)
            configuration.connections = 1
            configuration.lastUsableStreamID = 21  // ten streams per connection
            let client = try APNsClient(
                configuration: configuration, tokens: APNsProviderTokenSource(key: f.key), eventLoopGroup: f.group)
            let results = try await sendAll(client, (0..<45).map { alert(deviceToken($0)) }, concurrency: 5)
            #expect(results.allSatisfy { $0.action == .done })
            #expect(f.simulator.notifications().count == 45)
            #expect(f.simulator.stats.connectionsOpened >= 5)
            await client.shutdown()
        }
    }

    @Test("a client that offers no ALPN gets HTTP/2 by prior knowledge, as aioapns expects")
    func priorKnowledge() async throws {
        try await SimulatorFixture.with { f in
            var configuration = APNsClientConfiguration(environment: .sandbox, url: f.simulator.url, trustRootsPEMFile: f.caPath)
            configuration.offersALPN = false
            let client = try APNsClient(
                configuration: configuration, tokens: APNsProviderTokenSource(key: f.key), eventLoopGroup: f.group)
            #expect(try await client.send(alert(deviceToken(5))).action == .done)
            #expect(f.simulator.notifications(token: deviceToken(5)).count == 1)
            await client.shutdown()
        }
    }

    @Test("an untrusted certificate fails fast as connectFailed, without a reconnect storm")
    func untrusted() async throws {
        try await SimulatorFixture.with { f in
            var configuration = APNsClientConfiguration(environment: .sandbox, url: f.simulator.url, trustRootsPEMFile: nil)
            configuration.requestTimeout = .seconds(5)
            let client = try APNsClient(
                configuration: configuration, tokens: APNsProviderTokenSource(key: f.key), eventLoopGroup: f.group)
            let result = try await client.send(alert(deviceToken(1)))
            guard case .transportFailure(.connectFailed) = result else {
                Issue.record("expected connectFailed, got \(result)")
                return
            }
            #expect(f.simulator.stats.connectionsOpened <= configuration.connections, "one attempt per pooled connection, no storm")
            await client.shutdown()
        }
    }
}
