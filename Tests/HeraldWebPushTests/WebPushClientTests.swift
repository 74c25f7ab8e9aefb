import Crypto
import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldDelivery
import HeraldKit
import HeraldPushCore
import HeraldSimulatorSupport
import HeraldStore
import HeraldTestSupport
import HeraldWebPush
import HeraldWebPushCore
import HeraldWebPushService
import HeraldWebPushSimulator
import NIOCore
import NIOPosix
import Synchronization
import Testing
import WebPushCrypto

/// Herald's Web Push sender against its simulator: real TLS, real VAPID, real RFC 8291
/// encryption, decrypted on the other side with the subscription's private key.
@Suite struct WebPushClientTests {
    /// A resolver that answers what a test says (DNS rebinding, an inside name).
    struct FixedResolver: WebPushHostResolver {
        var answers: [String: [[UInt8]]]
        func addresses(of host: String) async throws -> [[UInt8]] { answers[host] ?? [] }
    }

    static let signer = VAPIDSigner(key: VAPIDKey(privateKey: .init()), subject: try! VAPIDSubject("mailto:ops@example.com"))

    /// A client that trusts the simulators' CAs and may reach them (and only them) on 127.0.0.1.
    static func client(
        for simulators: [WebPushSimulator], resolver: (any WebPushHostResolver)? = nil, idleTimeout: Duration = .seconds(300)
    ) throws -> WebPushClient {
        let policy = WebPushAddressPolicy(allowedHosts: Set(simulators.map { "127.0.0.1:\($0.port)" }))
        let guardian = resolver.map { WebPushEndpointGuard(policy: policy, resolver: $0) } ?? WebPushEndpointGuard(policy: policy)
        var configuration = WebPushClientConfiguration(endpointGuard: guardian)
        configuration.trustRootsPEM = simulators.map(\.tls.caPEM)
        configuration.idleTimeout = idleTimeout
        // A starved CI machine once took longer than the 15 s default to answer a local push;
        // the timeout is the subject of its own tests, not of these.
        configuration.requestTimeout = .seconds(60)
        return try WebPushClient(configuration: configuration, eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
    }

    static func delivery(
        to subscription: WebPushSimulatorSubscription, payload: String, collapseID: String? = nil, now: Date = Date(), id: Int64 = 1
    ) throws -> ClaimedDelivery {
        let keys = try WebPushKeys(p256dh: subscription.keys.p256dh, auth: subscription.keys.auth)
        let device = DeviceRecord(
            rowID: 1, app: "kasia", platform: .web, token: subscription.endpoint, attributes: DeviceAttributes(production: true).setting(webPushKeys: keys),
            createdAt: now, updatedAt: now, lastSeen: now)
        return ClaimedDelivery(
            id: id, eventID: "e\(id)", device: device,
            push: RenderedPush(pushType: .alert, priority: .immediate, collapseID: collapseID, payload: Array(payload.utf8)),
            apnsID: UUID(), attempt: 1, expiresAt: now.addingTimeInterval(3600))
    }

    @Test("a push Herald encrypts and signs reaches the simulator over TLS, which checks VAPID and decrypts exactly the JSON sent")
    func roundTrip() async throws {
        let sim = try await WebPushSimulator.start()
        defer { Task { await sim.shutdown() } }
        let client = try Self.client(for: [sim])
        let subscription = sim.subscribe(applicationServerKey: Self.signer.key.applicationServerKey)
        let provider = WebPushProvider(client: client, signer: Self.signer)
        let payload = #"{"aps":{"alert":{"title":"Hi","body":"Hello"}},"room":"r1"}"#
        let outcome = await provider.send(try Self.delivery(to: subscription, payload: payload, collapseID: "kasia:tx/1"))
        #expect(outcome == .delivered)
        let records = sim.notifications(endpoint: subscription.endpoint)
        #expect(records.count == 1)
        #expect(records.first?.plaintext == payload)
        #expect(records.first?.urgency == "high")
        #expect((3500...3600).contains(records.first?.ttl ?? 0))
        #expect(records.first?.topic == WebPushMessage.topic(forCollapseID: "kasia:tx/1"))
        #expect(records.first?.vapidKey == Self.signer.key.applicationServerKey)
        // The keep-alive connection carries the next push too.
        #expect(await provider.send(try Self.delivery(to: subscription, payload: "{}")) == .delivered)
        #expect(sim.notifications(endpoint: subscription.endpoint).count == 2)
        await client.shutdown()
    }

    @Test("a lane's batch: more pushes than a connection's stream limit, over two origins, one subscription gone; each outcome is its own delivery's and each push arrives once")
    func batches() async throws {
        let first = try await WebPushSimulator.start()
        let second = try await WebPushSimulator.start()
        defer { Task { await first.shutdown(); await second.shutdown() } }
        let client = try Self.client(for: [first, second])
        let provider = WebPushProvider(client: client, signer: Self.signer)
        let live = [first.subscribe(), first.subscribe(), second.subscribe()]
        let gone = first.subscribe()
        first.addFault(WebPushSimulatorFault(kind: .gone, endpoint: gone.endpoint))
        let subscriptions = live + [gone]
        // The first batch meets origins not yet known to speak HTTP/2 (sent one by one, side by
        // side); the second goes to their pools as batches, past the simulator's 100 streams.
        for round in 0..<2 {
            let deliveries = try (0..<250).map { n in
                try Self.delivery(to: subscriptions[n % 4], payload: #"{"round":\#(round),"n":\#(n)}"#, id: Int64(n))
            }
            let outcomes = await provider.send(deliveries)
            #expect(outcomes.count == deliveries.count)
            for (n, outcome) in outcomes.enumerated() {
                if n % 4 == 3 {
                    guard case .tokenDead = outcome else { Issue.record("delivery \(n) to the gone subscription: \(outcome)"); continue }
                } else {
                    #expect(outcome == .delivered, "delivery \(n)")
                }
            }
        }
        for (index, subscription) in live.enumerated() {
            let expected = (0..<2).flatMap { round in stride(from: index, to: 250, by: 4).map { #"{"round":\#(round),"n":\#($0)}"# } }
            #expect(sim(for: subscription, first, second).notifications(endpoint: subscription.endpoint).map(\.plaintext).sorted() == expected.sorted())
        }
        #expect(first.notifications(endpoint: gone.endpoint).isEmpty)
        await client.shutdown()

        func sim(for subscription: WebPushSimulatorSubscription, _ sims: WebPushSimulator...) -> WebPushSimulator {
            sims.first { subscription.endpoint.hasPrefix($0.origin) }!
        }
    }

    @Test("a push service that speaks only HTTP/1.1 gets the same pushes over keep-alive HTTP/1.1 connections")
    func http1Only() async throws {
        var configuration = WebPushSimulator.Configuration()
        configuration.offersHTTP2 = false
        let sim = try await WebPushSimulator.start(configuration: configuration)
        defer { Task { await sim.shutdown() } }
        let client = try Self.client(for: [sim])
        let subscription = sim.subscribe(applicationServerKey: Self.signer.key.applicationServerKey)
        let provider = WebPushProvider(client: client, signer: Self.signer)
        let outcomes = await withTaskGroup(of: PushOutcome.self) { group in
            for n in 0..<20 { group.addTask { await provider.send(try! Self.delivery(to: subscription, payload: #"{"n":\#(n)}"#)) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.allSatisfy { $0 == .delivered })
        #expect(Set(sim.notifications(endpoint: subscription.endpoint).map(\.plaintext)) == Set((0..<20).map { #"{"n":\#($0)}"# }))
        sim.addFault(WebPushSimulatorFault(kind: .gone, endpoint: subscription.endpoint))
        guard case .tokenDead = await provider.send(try Self.delivery(to: subscription, payload: "{}")) else { Issue.record("not gone"); return }
        await client.shutdown()
    }

    @Test("an origin with nothing to send is forgotten and its connections closed (HTTP/2 and HTTP/1.1); the next push opens new ones")
    func idleOriginsClosed() async throws {
        var http1 = WebPushSimulator.Configuration()
        http1.offersHTTP2 = false
        let modern = try await WebPushSimulator.start()
        let small = try await WebPushSimulator.start(configuration: http1)
        defer { Task { await modern.shutdown(); await small.shutdown() } }
        let client = try Self.client(for: [modern, small], idleTimeout: .milliseconds(200))
        let provider = WebPushProvider(client: client, signer: Self.signer)
        let subscriptions = [modern.subscribe(), small.subscribe()]
        // (How many origins are open between the sends depends on the machine's speed: not asserted.)
        for subscription in subscriptions { #expect(await provider.send(try Self.delivery(to: subscription, payload: "{}")) == .delivered) }
        // Polled, not timed: a loaded machine sweeps late, never wrongly.
        for _ in 0..<1_200 where client.origins > 0 { try await Task.sleep(for: .milliseconds(50)) }
        #expect(client.origins == 0)
        for subscription in subscriptions { #expect(await provider.send(try Self.delivery(to: subscription, payload: "{}")) == .delivered) }
        #expect(modern.notifications().count == 2 && small.notifications().count == 2)
        await client.shutdown()
    }

    @Test("a push too large for one record is shrunk before encryption: Kasia's inline payload becomes null, and HeraldKit decodes what the browser gets")
    func shrinksToFit() async throws {
        let sim = try await WebPushSimulator.start()
        defer { Task { await sim.shutdown() } }
        let client = try Self.client(for: [sim])
        let subscription = sim.subscribe()
        let big = #"{"aps":{"alert":"New message","mutable-content":1},"kasia":{"type":"contextual_message","txId":"e01","sender":"kaspa:qp0l70zd5x85ttwd6jv7g3s3a8llzj96d8dncn4zmhv4tlzx5k2jyqh70xmfj","timestamp":1750000000,"daaScore":7,"payload":""# + String(repeating: "ab", count: 2_500) + #""}}"#
        let outcome = await WebPushProvider(client: client, signer: Self.signer).send(try Self.delivery(to: subscription, payload: big))
        #expect(outcome == .delivered)
        let plaintext = try #require(sim.notifications(endpoint: subscription.endpoint).first?.plaintext)
        #expect(plaintext.utf8.count <= WebPushEncryption.maximumPlaintext)
        #expect(plaintext.contains(#""payload":null"#), "\(plaintext.prefix(200))")
        // A web app's service worker hands the decrypted data to the same decoder as an iOS extension.
        guard case .kasia(let kasia) = try HeraldPush(json: Data(plaintext.utf8)) else { Issue.record("not a Kasia push"); return }
        #expect(kasia.txID == "e01" && kasia.payloadHex == nil && kasia.daaScore == 7)
        await client.shutdown()
    }

    @Test("an endpoint that accepts TCP and never speaks TLS costs one connect timeout per send, never a hang")
    func silentTLSPeer() async throws {
        // A listener that accepts connections and never says anything.
        let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { $0.eventLoop.makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
        defer { listener.close(promise: nil) }
        let port = try #require(listener.localAddress?.port)
        let sim = try await WebPushSimulator.start()
        defer { Task { await sim.shutdown() } }
        var configuration = WebPushClientConfiguration(endpointGuard: WebPushEndpointGuard(policy: WebPushAddressPolicy(allowedHosts: ["127.0.0.1:\(port)"])))
        configuration.connectTimeout = .seconds(1)
        let client = try WebPushClient(configuration: configuration, eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        let provider = WebPushProvider(client: client, signer: Self.signer)
        var silent = sim.subscribe()
        silent.endpoint = "https://127.0.0.1:\(port)/push/silent"
        for _ in 0..<2 {
            let outcome = await provider.send(try Self.delivery(to: silent, payload: "{}"))
            guard case .retry(_, .destination, let reason) = outcome else { Issue.record("\(outcome)"); return }
            #expect(reason.contains("no TLS handshake"), "\(reason)")
        }
        await client.shutdown()
    }

    // Over HTTP/1.1; the HTTP/2 cut is HTTP2ConnectionTests.oversizedBody (in process, without a loaded machine's timing).
    @Test("an answer whose body does not end is cut at the cap over HTTP/1.1: the push counts as answered, not as a timeout", arguments: [false])
    func endlessAnswer(http2: Bool) async throws {
        var configuration = WebPushSimulator.Configuration()
        configuration.offersHTTP2 = http2
        let sim = try await WebPushSimulator.start(configuration: configuration)
        defer { Task { await sim.shutdown() } }
        let client = try Self.client(for: [sim])
        let provider = WebPushProvider(client: client, signer: Self.signer)
        let subscription = sim.subscribe()
        _ = sim.addFault(WebPushSimulatorFault(kind: .endlessBody, endpoint: subscription.endpoint))
        // Read to its end, the body would outlast the 15 s request timeout (a retry); cut at the
        // cap, the answer's 201 counts at once. HTTP/2 is learned on the first connection: two pushes.
        for _ in 0..<2 {
            let outcome = await provider.send(try Self.delivery(to: subscription, payload: "{}"))
            #expect(outcome == .delivered, "\(outcome)")
        }
        #expect(sim.stats.endlessBodyBytes > 0, "the fault answered")
        await client.shutdown()
    }

    /// The push services trusted with an app's pause: these simulators, standing in for the browsers'.
    static func trusting(_ simulators: [WebPushSimulator]) -> TrustedPushServices {
        TrustedPushServices(simulators.map { String($0.origin.dropFirst("https://".count)) })
    }

    @Test("origins the operator does not trust never pause the app: two that take the key, then refuse it, cost their subscriptions and a minute's wait of their own origin")
    func untrustedOriginsNeverPause() async throws {
        let mallory1 = try await WebPushSimulator.start(), mallory2 = try await WebPushSimulator.start(), browser = try await WebPushSimulator.start()
        defer { Task { await mallory1.shutdown(); await mallory2.shutdown(); await browser.shutdown() } }
        let client = try Self.client(for: [mallory1, mallory2, browser])
        let clock = ManualClock(now: Date())
        let provider = WebPushProvider(client: client, signer: Self.signer, trusted: Self.trusting([browser]), now: { clock.now() })
        let otherKey = VAPIDKey(privateKey: .init()).applicationServerKey
        for _ in 0..<3 {
            for origin in [mallory1, mallory2] {
                #expect(await provider.send(try Self.delivery(to: origin.subscribe(), payload: "{}")) == .delivered)
                #expect(await provider.send(try Self.delivery(to: origin.subscribe(applicationServerKey: otherKey), payload: "{}"))
                    == .retry(after: nil, scope: .token, reason: "HTTP 403 VAPID refused"))
                // The refusing origin then waits a minute as a whole: its other pushes are not sent.
                guard case .retry(_, .destination, "origin backing off") = await provider.send(try Self.delivery(to: origin.subscribe(), payload: "{}")) else {
                    Issue.record("a refusing untrusted origin was sent to again at once")
                    return
                }
                // The browser's service is not held back by it.
                #expect(await provider.send(try Self.delivery(to: browser.subscribe(), payload: "{}")) == .delivered)
            }
            clock.advance(by: 61)
        }
        #expect(await provider.send(try Self.delivery(to: browser.subscribe(), payload: "{}")) == .delivered)
        // The browsers' own list by default: the simulators' loopback origins are not in it.
        let defaults = WebPushProvider(client: client, signer: Self.signer)
        for origin in [mallory1, mallory2] {
            #expect(await defaults.send(try Self.delivery(to: origin.subscribe(), payload: "{}")) == .delivered)
            #expect(await defaults.send(try Self.delivery(to: origin.subscribe(applicationServerKey: otherKey), payload: "{}"))
                == .retry(after: nil, scope: .token, reason: "HTTP 403 VAPID refused"))
        }
        #expect(TrustedPushServices.browsers.trusts(origin: "https://fcm.googleapis.com"))
        #expect(TrustedPushServices.browsers.trusts(origin: "https://wns2-par02p.notify.windows.com"))
        #expect(!TrustedPushServices.browsers.trusts(origin: "https://notify.windows.com.evil.example"))
        #expect(!TrustedPushServices.browsers.trusts(origin: "https://evilfcm.googleapis.com.example"))
        await client.shutdown()
    }

    @Test("a 403 is charged to the subscription; the app's key counts as refused only when two trusted origins that took it refuse it")
    func refusalBlame() async throws {
        let a = try await WebPushSimulator.start(), b = try await WebPushSimulator.start(), stranger = try await WebPushSimulator.start()
        defer { Task { await a.shutdown(); await b.shutdown(); await stranger.shutdown() } }
        let client = try Self.client(for: [a, b, stranger])
        let provider = WebPushProvider(client: client, signer: Self.signer, trusted: Self.trusting([a, b, stranger]))
        let otherKey = VAPIDKey(privateKey: .init()).applicationServerKey
        // An origin nobody delivered to refuses, again and again: only its subscription backs off.
        for _ in 0..<3 {
            let outcome = await provider.send(try Self.delivery(to: stranger.subscribe(applicationServerKey: otherKey), payload: "{}"))
            #expect(outcome == .retry(after: nil, scope: .token, reason: "HTTP 403 VAPID refused"))
        }
        // Two origins take the app's key...
        #expect(await provider.send(try Self.delivery(to: a.subscribe(), payload: "{}")) == .delivered)
        #expect(await provider.send(try Self.delivery(to: b.subscribe(), payload: "{}")) == .delivered)
        // ...one of them refusing is still the subscription's doing; both refusing is the key's.
        #expect(await provider.send(try Self.delivery(to: a.subscribe(applicationServerKey: otherKey), payload: "{}"))
            == .retry(after: nil, scope: .token, reason: "HTTP 403 VAPID refused"))
        #expect(await provider.send(try Self.delivery(to: b.subscribe(applicationServerKey: otherKey), payload: "{}"))
            == .refreshCredentials(reason: "HTTP 403 VAPID refused"))
        await client.shutdown()
    }

    @Test("what a push service refuses: another key than the subscription's (403), a bad token (401), an unknown subscription (404), an ended one (410)")
    func refusals() async throws {
        let sim = try await WebPushSimulator.start()
        defer { Task { await sim.shutdown() } }
        let client = try Self.client(for: [sim])
        // The simulator stands for a browser's push service: trusted, so a refusal holds no origin.
        let provider = WebPushProvider(client: client, signer: Self.signer, trusted: Self.trusting([sim]))
        let otherKey = VAPIDKey(privateKey: .init()).applicationServerKey
        let boundElsewhere = sim.subscribe(applicationServerKey: otherKey)
        // One subscription refused (another key than the app's): charged to it, not to the app.
        #expect(await provider.send(try Self.delivery(to: boundElsewhere, payload: "{}")) == .retry(after: nil, scope: .token, reason: "HTTP 403 VAPID refused"))

        let subscription = sim.subscribe()
        let delivery = try Self.delivery(to: subscription, payload: "{}")
        let keys = try #require(delivery.device.attributes.webPushKeys)
        var message = try WebPushProvider.message(
            for: delivery, keys: keys, endpoint: try WebPushEndpoint(subscription.endpoint), signer: Self.signer, now: Date())
        message.authorization = VAPID.authorization(
            key: Self.signer.key, subject: Self.signer.subject, audience: "https://push.example.com", expiresAt: Date().addingTimeInterval(600))
        #expect(try await client.send(message).status == 401)

        var unknown = subscription
        unknown.endpoint = sim.origin + "/push/nobody"
        let gone = await provider.send(try Self.delivery(to: unknown, payload: "{}"))
        guard case .tokenDead(_, let reason) = gone else { Issue.record("\(gone)"); return }
        #expect(reason == "HTTP 404 subscription gone")

        sim.addFault(WebPushSimulatorFault(kind: .gone, endpoint: subscription.endpoint, count: 1))
        for _ in 0..<2 {
            guard case .tokenDead(_, let reason) = await provider.send(delivery) else { Issue.record("not dead"); return }
            #expect(reason == "HTTP 410 subscription gone")
        }
        #expect(sim.notifications().isEmpty)
        await client.shutdown()
    }

    @Test("SSRF at send time: a host that now resolves inside (DNS rebinding), or any loopback name, is refused and nothing is sent")
    func sendTimeSSRF() async throws {
        let sim = try await WebPushSimulator.start()
        defer { Task { await sim.shutdown() } }
        let resolver = FixedResolver(answers: ["push.example.com": [[93, 184, 216, 34], [10, 0, 0, 5]], "127.0.0.1": [[127, 0, 0, 1]]])
        let client = try Self.client(for: [sim], resolver: resolver)
        let provider = WebPushProvider(client: client, signer: Self.signer)
        var subscription = sim.subscribe()
        subscription.endpoint = "https://push.example.com/push/abc"
        #expect(await provider.send(try Self.delivery(to: subscription, payload: "{}")) == .failed(reason: "endpoint reaches 10.0.0.5, an address Herald does not send to"))
        // The system resolver: localhost is loopback, and its port is not the allowed one.
        let system = try Self.client(for: [sim])
        subscription.endpoint = "https://localhost:\(sim.port)/push/abc"
        let local = await WebPushProvider(client: system, signer: Self.signer).send(try Self.delivery(to: subscription, payload: "{}"))
        guard case .failed(let reason) = local else { Issue.record("\(local)"); return }
        #expect(reason.hasPrefix("endpoint reaches "), "\(reason)")
        #expect(sim.stats.accepted == 0 && sim.stats.rejected.isEmpty)
        await client.shutdown()
        await system.shutdown()
    }

    @Test("a 429 from one push service holds back that origin's pushes (without sending them) until its Retry-After; another origin's go through")
    func originBackOff() async throws {
        let busy = try await WebPushSimulator.start()
        let calm = try await WebPushSimulator.start()
        defer { Task { await busy.shutdown(); await calm.shutdown() } }
        let client = try Self.client(for: [busy, calm])
        let clock = ManualClock(now: Date())
        let provider = WebPushProvider(client: client, signer: Self.signer, now: { clock.now() })
        let atBusy = busy.subscribe()
        let atCalm = calm.subscribe()
        busy.addFault(WebPushSimulatorFault(kind: .tooManyRequests, retryAfter: 60))
        #expect(await provider.send(try Self.delivery(to: atBusy, payload: "{}")) == .retry(after: .seconds(60), scope: .destination, reason: "HTTP 429 too many requests"))
        // Held back by Herald itself: the busy service sees no second request.
        let held = await provider.send(try Self.delivery(to: atBusy, payload: "{}"))
        #expect(held == .retry(after: .seconds(60), scope: .destination, reason: "origin backing off"))
        #expect(busy.stats.rejected == ["429 rate": 1])
        #expect(await provider.send(try Self.delivery(to: atCalm, payload: "{}")) == .delivered)
        // Past the Retry-After (and with the storm over) the busy origin is tried again.
        busy.reset()
        clock.advance(by: 61)
        #expect(await provider.send(try Self.delivery(to: atBusy, payload: "{}", now: Date())) == .delivered)
        await client.shutdown()
    }

    @Test("answers mapped once: 201/202 delivered, 404/410 gone, 413 shrink, 406/429 back off, 401/403 VAPID, 5xx retry, a redirect refused")
    func answerTable() {
        #expect(WebPushAnswer(status: 201, retryAfterHeader: nil) == .delivered)
        #expect(WebPushAnswer(status: 202, retryAfterHeader: nil) == .delivered)
        #expect(WebPushAnswer(status: 410, retryAfterHeader: nil) == .subscriptionGone(status: 410))
        #expect(WebPushAnswer(status: 404, retryAfterHeader: nil) == .subscriptionGone(status: 404))
        #expect(WebPushAnswer(status: 413, retryAfterHeader: nil) == .tooLarge)
        #expect(WebPushAnswer(status: 429, retryAfterHeader: "12") == .backOff(status: 429, retryAfter: .seconds(12)))
        #expect(WebPushAnswer(status: 406, retryAfterHeader: "x") == .backOff(status: 406, retryAfter: nil))
        #expect(WebPushAnswer(status: 401, retryAfterHeader: nil) == .vapidRefused(status: 401))
        #expect(WebPushAnswer(status: 403, retryAfterHeader: nil) == .vapidRefused(status: 403))
        #expect(WebPushAnswer(status: 503, retryAfterHeader: "99999") == .serviceError(status: 503, retryAfter: .seconds(3600)))
        #expect(WebPushAnswer(status: 301, retryAfterHeader: nil).reason == "HTTP 301 redirect not followed")
        #expect(WebPushAnswer(status: 400, retryAfterHeader: nil) == .refused(status: 400))
    }

    @Test("Topic from a collapse id: kept when already ≤ 32 base64url characters, else a stable 32-character hash")
    func topics() {
        #expect(WebPushMessage.topic(forCollapseID: "c1") == "c1")
        #expect(WebPushMessage.topic(forCollapseID: nil) == nil)
        let hashed = WebPushMessage.topic(forCollapseID: "kasia:0123456789abcdef0123456789abcdef")
        #expect(hashed?.count == 32)
        #expect(hashed == WebPushMessage.topic(forCollapseID: "kasia:0123456789abcdef0123456789abcdef"))
        #expect(hashed?.utf8.allSatisfy(Base64URL.isAlphabet) == true)
    }

    @Test("interop: pywebpush (PyPI) sends to Herald's simulator, which verifies its VAPID token and decrypts its message")
    func pywebpushInterop() async throws {
        let sim = try await WebPushSimulator.start()
        defer { Task { await sim.shutdown() } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-pywebpush-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = try sim.tls.writeCA(to: directory.path)
        let key = VAPIDKey(privateKey: .init())
        let pem = directory.appendingPathComponent("vapid.pem")
        try Data(key.pem.utf8).write(to: pem)
        let subscription = sim.subscribe(applicationServerKey: key.applicationServerKey)
        let message = #"{"aps":{"alert":"from pywebpush"}}"#
        let arguments = [subscription.endpoint, subscription.keys.p256dh, subscription.keys.auth, pem.path, ca, message]
        let status = try await runFixture("pywebpush_send.py", arguments, needs: "pywebpush")
        #expect(status == "201")
        #expect(sim.notifications(endpoint: subscription.endpoint).map(\.plaintext) == [message])
        #expect(sim.notifications(endpoint: subscription.endpoint).first?.ttl == 60)
    }
}
