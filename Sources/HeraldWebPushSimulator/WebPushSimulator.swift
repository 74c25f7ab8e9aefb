import Foundation
public import HeraldSimulatorSupport
import HeraldPushCore
import HeraldWebPushCore
import HTTPTypes
import Hummingbird
import HummingbirdHTTP2
public import Logging
import NIOCore
import NIOSSL
import Synchronization
import WebPushCrypto

/// A Web Push service look-alike (RFC 8030, 8291, 8292) held to what Mozilla's, Google's and
/// Apple's push services check: it hands out subscriptions (`POST /subscribe`, keeping each
/// subscription's private key), and for every push checks the VAPID token (ES256 signature by
/// `k`, `aud` its own origin, `exp` within 24 hours, a `sub`; `k` the key the subscription was
/// made with), a `TTL` header, `Content-Encoding: aes128gcm`, `Urgency` and `Topic`, the
/// 4,096-byte limit, then decrypts the message and records the plaintext. Pushes go over TLS
/// (HTTP/2 or HTTP/1.1, or HTTP/1.1 only); a plain-HTTP control port records and injects faults
/// (`GET /stats`, `GET /notifications?endpoint=`, `POST /subscribe`, `POST /faults`, `POST /reset`).
public final class WebPushSimulator: Sendable {
    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        public var port = 0
        /// The control API's own port (0: a free one); nil opens none, `control(_:)` still answers.
        public var controlPort: Int? = 0
        /// Offer HTTP/2 in ALPN (as Google's, Mozilla's and Apple's services do); false: HTTP/1.1
        /// only, as a small UnifiedPush server may be.
        public var offersHTTP2 = true
        public init() {}
    }

    public let configuration: Configuration
    public let tls: SimulatorTLSIdentity
    let state: WebPushSimulatorState
    private let listeners: SimulatorListeners
    public var port: Int { listeners.port }
    public var controlPort: Int? { listeners.controlPort }

    /// `https://host:port`: the origin every subscription's endpoint is under.
    public var origin: String { "https://\(configuration.host):\(port)" }
    public var stats: WebPushSimulatorStats { state.stats }

    /// A new subscription, as a browser's `pushManager.subscribe` would return it.
    /// - Parameter applicationServerKey: the VAPID public key it is bound to (nil: any key).
    public func subscribe(applicationServerKey: String? = nil) -> WebPushSimulatorSubscription {
        state.subscribe(origin: origin, applicationServerKey: applicationServerKey)
    }

    /// The messages accepted for `endpoint` (all, when nil), decrypted.
    public func notifications(endpoint: String? = nil) -> [WebPushSimulatorRecord] { state.notifications(endpoint: endpoint) }

    /// Forgets messages, faults and counts (the end of a storm); subscriptions stay.
    public func reset() { state.reset() }

    /// Adds a fault; returns its id.
    @discardableResult
    public func addFault(_ fault: WebPushSimulatorFault) -> Int { state.addFault(fault) }

    private init(configuration: Configuration, tls: SimulatorTLSIdentity, state: WebPushSimulatorState, listeners: SimulatorListeners) {
        self.configuration = configuration
        self.tls = tls
        self.state = state
        self.listeners = listeners
    }

    /// Starts both listeners.
    public static func start(configuration: Configuration = .init(), logger: Logger = Logger(label: "herald.mock-webpush")) async throws -> WebPushSimulator {
        let tls = try SimulatorTLSIdentity.generate(host: configuration.host)
        let state = WebPushSimulatorState()
        var tlsConfiguration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(tls.leafPEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(tls.leafKeyPEM.utf8), format: .pem)))
        tlsConfiguration.applicationProtocols = configuration.offersHTTP2 ? ["h2", "http/1.1"] : ["http/1.1"]
        // The origin names the bound port, known once listening.
        let origin = OriginBox()

        let api = Router()
        api.post("/push/:id") { request, context -> Response in
            let body = try await request.body.collect(upTo: 1 << 16)
            return await Self.push(
                id: context.parameters.get("id") ?? "", headers: request.headers, body: Array(buffer: body), origin: origin.value,
                state: state)
        }
        api.post("/subscribe") { request, _ -> Response in
            let answer = Self.subscribe(body: Array(buffer: try await request.body.collect(upTo: 65_536)), origin: origin.value, state: state)
            return Self.json(HTTPResponse.Status(code: answer.status), answer.json)
        }
        let listeners = try await SimulatorListeners.start(
            api: api, control: { await Self.control($0, origin: origin.value, state: state) }, tls: tlsConfiguration, http2: configuration.offersHTTP2, host: configuration.host, port: configuration.port,
            controlPort: configuration.controlPort, name: "herald-mock-webpush", logger: logger)
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        origin.set("https://\(host):\(listeners.port)")
        return WebPushSimulator(configuration: configuration, tls: tls, state: state, listeners: listeners)
    }

    public func shutdown() async { await listeners.shutdown() }

    /// The control API (`POST /subscribe`, `GET /stats`, `GET /notifications?endpoint=`,
    /// `POST /faults`, `POST /reset`), for whichever listener carries it.
    public func control(_ call: SimulatorControlCall) async -> SimulatorControlAnswer { await Self.control(call, origin: origin, state: state) }

    static func control(_ call: SimulatorControlCall, origin: String, state: WebPushSimulatorState) async -> SimulatorControlAnswer {
        switch (call.method, call.path) {
        case ("POST", "/subscribe"):
            return subscribe(body: call.body, origin: origin, state: state)
        case ("GET", "/stats"):
            return SimulatorControlAnswer(status: 200, json: encode(state.stats))
        case ("GET", "/notifications"):
            return SimulatorControlAnswer(status: 200, json: encode(["notifications": state.notifications(endpoint: call.query["endpoint"])]))
        case ("POST", "/faults"):
            guard let fault = try? JSONDecoder().decode(WebPushSimulatorFault.self, from: Data(call.body)) else {
                return SimulatorControlAnswer(
                    status: 400,
                    json: #"{"error":"a fault is {\"kind\": gone|too_many_requests|server_error|delay|endless_body, \"endpoint\", \"count\", \"retry_after\", \"status\", \"delay_ms\"}"}"#)
            }
            return SimulatorControlAnswer(status: 201, json: #"{"id":\#(state.addFault(fault))}"#)
        case ("POST", "/reset"):
            state.reset()
            return SimulatorControlAnswer(status: 200, json: #"{"reset":true}"#)
        default:
            return .error(404, "no route \(call.method) \(call.path)")
        }
    }

    /// Whether it still listens (its service and control ports).
    public var isListening: Bool { listeners.isListening }

    /// `POST /subscribe` (`{"application_server_key": base64url}` or empty): a new subscription.
    static func subscribe(body: [UInt8], origin: String, state: WebPushSimulatorState) -> SimulatorControlAnswer {
        struct Body: Decodable { var application_server_key: String? }
        var key: String?
        if !body.isEmpty {
            guard let decoded = try? JSONDecoder().decode(Body.self, from: Data(body)) else {
                return SimulatorControlAnswer(status: 400, json: #"{"error":"the body is {\"application_server_key\": base64url} or empty"}"#)
            }
            if let text = decoded.application_server_key {
                guard let point = Base64URL.decode(Substring(text)), point.count == 65, point.first == 0x04 else {
                    return SimulatorControlAnswer(status: 400, json: #"{"error":"application_server_key is the base64url of a 65-byte P-256 public key"}"#)
                }
                key = text
            }
        }
        return SimulatorControlAnswer(status: 201, json: encode(state.subscribe(origin: origin, applicationServerKey: key)))
    }

    // MARK: A push

    static func push(id: String, headers: HTTPFields, body: [UInt8], origin: String, state: WebPushSimulatorState) async -> Response {
        let endpoint = "\(origin)/push/\(id)"
        func refuse(_ status: HTTPResponse.Status, _ reason: String, _ message: String, retryAfter: Int? = nil) -> Response {
            state.rejected(status.code, reason)
            var response = json(status, encode(["code": String(status.code), "errno": reason, "error": status.reasonPhrase, "message": message]))
            if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        }
        guard let subscriber = state.subscriber(id) else { return refuse(.notFound, "unknown", "no such subscription") }
        guard !subscriber.gone else { return refuse(.gone, "gone", "the subscription has expired or been unsubscribed") }
        if let fault = state.fault(for: endpoint) {
            switch fault.kind {
            case .gone:
                state.end(id)
                return refuse(.gone, "gone", "the subscription has expired or been unsubscribed")
            case .tooManyRequests:
                return refuse(.tooManyRequests, "rate", "too many requests", retryAfter: fault.retryAfter)
            case .serverError:
                let status: HTTPResponse.Status = fault.status.map { HTTPResponse.Status(code: $0) } ?? .serviceUnavailable
                return refuse(status, "server", "the push service failed", retryAfter: fault.retryAfter)
            case .delay:
                try? await Task.sleep(for: .milliseconds(max(0, min(fault.delayMilliseconds ?? 0, 60_000))))
            case .endlessBody:
                // An answer that never ends: what a client reads of it is counted.
                return Response(status: .created, body: ResponseBody { writer in
                    // 64 KiB every 50 ms for 30 s: a client that reads to the end waits past any sane deadline.
                    let chunk = ByteBuffer(repeating: UInt8(ascii: "x"), count: 65_536)
                    for _ in 0..<600 {
                        do { try await writer.write(chunk) } catch { return }
                        state.streamed(chunk.readableBytes)
                        try await Task.sleep(for: .milliseconds(50))
                    }
                    try await writer.finish(nil)
                })
            }
        }
        // VAPID (RFC 8292): verified once per distinct token while it is valid.
        let now = Date()
        let authorization = headers[.authorization]
        let key: String
        if let authorization, let cached = state.verifiedKey(authorization, now: now) {
            key = cached
        } else {
            do {
                key = try VAPID.verify(authorization: authorization, audience: origin, now: now)
            } catch {
                return refuse(.unauthorized, "vapid", error.description)
            }
            if let authorization { state.rememberVerified(authorization, key: key, expires: now.addingTimeInterval(60)) }
        }
        if let bound = subscriber.applicationServerKey, bound != key {
            return refuse(.forbidden, "vapid_key", "the VAPID key is not the one the subscription was made with")
        }
        guard let ttlText = headers[HTTPField.Name("TTL")!], let ttl = Int(ttlText), ttl >= 0 else {
            return refuse(.badRequest, "ttl", "a TTL header (whole seconds) is required")
        }
        let urgency = headers[HTTPField.Name("Urgency")!] ?? "normal"
        guard WebPushUrgency(rawValue: urgency) != nil else { return refuse(.badRequest, "urgency", "Urgency is very-low, low, normal or high") }
        let topic = headers[HTTPField.Name("Topic")!]
        if let topic, topic.isEmpty || topic.utf8.count > WebPushMessage.maximumTopicLength || !topic.utf8.allSatisfy(Base64URL.isAlphabet) {
            return refuse(.badRequest, "topic", "Topic is 1 to 32 base64url characters")
        }
        guard headers[.contentEncoding]?.lowercased() == "aes128gcm" else {
            return refuse(.badRequest, "encoding", "Content-Encoding is aes128gcm")
        }
        guard body.count <= WebPushEncryption.recordSize else { return refuse(.contentTooLarge, "too_large", "the body is over 4,096 bytes") }
        let plaintext: [UInt8]
        do {
            plaintext = try WebPushEncryption.decrypt(body, privateKey: subscriber.privateKey, auth: subscriber.auth)
        } catch {
            return refuse(.badRequest, "decrypt", "the message does not decrypt with the subscription's keys")
        }
        state.record(WebPushSimulatorRecord(
            endpoint: endpoint, plaintext: String(decoding: plaintext, as: UTF8.self), ttl: ttl, urgency: urgency, topic: topic, vapidKey: key))
        var response = Response(status: .created)
        response.headers[.location] = "\(origin)/message/\(UUID.random().lowercasedString)"
        return response
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response { SimulatorListeners.json(status, text) }

    static func encode(_ value: some Encodable) -> String { SimulatorListeners.encode(value) }
}

/// The origin, set once the port is bound.
final class OriginBox: Sendable {
    private let storage = Mutex("")
    var value: String { storage.withLock { $0 } }
    func set(_ origin: String) { storage.withLock { $0 = origin } }
}
