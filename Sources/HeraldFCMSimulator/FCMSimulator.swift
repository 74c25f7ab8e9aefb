import _CryptoExtras
public import Foundation
public import HeraldSimulatorSupport
import HeraldFCMCore
import HeraldPushCore
import HTTPTypes
import Hummingbird
import HummingbirdHTTP2
public import Logging
import NIOCore
import NIOSSL
import Synchronization

/// An FCM look-alike held to Google's documented behaviour: an OAuth token endpoint that checks
/// the service account's RS256 grant (signature, claims, lifetime) and `messages:send` over TLS
/// (HTTP/2, and HTTP/1.1 for clients such as firebase-admin that speak only that) that checks the
/// bearer, the project, exactly one target, string-only data, the 4,096-byte limit, priority and
/// ttl, answering with Google's error envelope. Fault injection and recording on a plain-HTTP
/// control port (`GET /stats`, `GET /notifications?token=`, `POST /faults`, `POST /reset`).
public final class FCMSimulator: Sendable {
    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        public var port = 0
        /// The control API's own port (0: a free one); nil opens none, `control(_:)` still answers.
        public var controlPort: Int? = 0
        /// The project messages may be sent for.
        public var projectID = "herald-simulator"
        public var clientEmail = "herald-simulator@herald-simulator.iam.gserviceaccount.com"
        /// Access tokens live this long (Google: about an hour).
        public var accessTokenLifetime: TimeInterval = 3599
        public init() {}
    }

    public let configuration: Configuration
    public let tls: SimulatorTLSIdentity
    /// The service-account JSON this simulator accepts grants from (its `token_uri` points here).
    public let serviceAccountJSON: Data
    let state: FCMSimulatorState
    private let listeners: SimulatorListeners
    public var port: Int { listeners.port }
    public var controlPort: Int? { listeners.controlPort }

    /// `https://host:port`: where clients send.
    public var url: URL { URL(string: "https://\(configuration.host):\(port)")! }
    /// The OAuth token endpoint.
    public var tokenURL: URL { URL(string: "https://\(configuration.host):\(port)/token")! }
    public var stats: FCMSimulatorStats { state.stats }
    /// The messages accepted for `token` (all, when nil).
    public func notifications(token: String?) -> [FCMSimulatorRecord] { state.notifications(token: token) }

    private init(configuration: Configuration, tls: SimulatorTLSIdentity, serviceAccountJSON: Data, state: FCMSimulatorState, listeners: SimulatorListeners) {
        self.configuration = configuration
        self.tls = tls
        self.serviceAccountJSON = serviceAccountJSON
        self.state = state
        self.listeners = listeners
    }

    /// Starts both listeners and makes the service account whose grants it accepts.
    public static func start(configuration: Configuration = .init(), logger: Logger = Logger(label: "herald.mock-fcm")) async throws -> FCMSimulator {
        let tls = try SimulatorTLSIdentity.generate(host: configuration.host)
        let state = FCMSimulatorState()
        var tlsConfiguration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: Array(tls.leafPEM.utf8), format: .pem))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(tls.leafKeyPEM.utf8), format: .pem)))
        tlsConfiguration.applicationProtocols = ["h2", "http/1.1"]

        // The port is known only once bound, and the account's token_uri names it: the
        // account's key is made first and its file written once the port is known.
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let holder = Mutex<(publicKey: _RSA.Signing.PublicKey, tokenURL: String)?>(nil)

        let api = Router()
        api.post("/token") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 65_536)
            guard let (publicKey, tokenURL) = holder.withLock({ $0 }) else { return Self.json(.serviceUnavailable, #"{"error":"starting"}"#) }
            if state.tokenEndpointDown() { return Self.json(.serviceUnavailable, #"{"error":"temporarily_unavailable"}"#) }
            switch Self.checkGrant(body: String(buffer: body), publicKey: publicKey, audience: tokenURL, clientEmail: configuration.clientEmail, now: Date()) {
            case .success(let account):
                let token = state.issue(account: account, lifetime: configuration.accessTokenLifetime, now: Date())
                return Self.json(.ok, #"{"access_token":"\#(token)","expires_in":\#(Int(configuration.accessTokenLifetime)),"token_type":"Bearer"}"#)
            case .failure(let refusal):
                state.grantRefused()
                return Self.json(.badRequest, Self.encode(["error": refusal.error, "error_description": refusal.description]))
            }
        }
        api.post("/v1/projects/:project/:method") { request, context -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let project = context.parameters.get("project") ?? ""
            let method = context.parameters.get("method") ?? ""
            return Self.send(
                method: method, project: project, authorization: request.headers[.authorization], body: Array(buffer: body),
                configuration: configuration, state: state)
        }
        let listeners = try await SimulatorListeners.start(
            api: api, control: { Self.control($0, state: state) }, tls: tlsConfiguration, host: configuration.host, port: configuration.port,
            controlPort: configuration.controlPort, name: "herald-mock-fcm", logger: logger)
        let apiPort = listeners.port
        let tokenURL = "https://\(configuration.host):\(apiPort)/token"
        holder.withLock { $0 = (key.publicKey, tokenURL) }
        let account = try FCMServiceAccount.file(
            privateKey: key, projectID: configuration.projectID, clientEmail: configuration.clientEmail, tokenURI: URL(string: tokenURL)!)
        return FCMSimulator(configuration: configuration, tls: tls, serviceAccountJSON: account, state: state, listeners: listeners)
    }

    public func shutdown() async { await listeners.shutdown() }

    /// The control API (`GET /stats`, `GET /notifications?token=`, `POST /faults`, `POST /reset`),
    /// for whichever listener carries it.
    public func control(_ call: SimulatorControlCall) async -> SimulatorControlAnswer { Self.control(call, state: state) }

    static func control(_ call: SimulatorControlCall, state: FCMSimulatorState) -> SimulatorControlAnswer {
        switch (call.method, call.path) {
        case ("GET", "/stats"):
            return SimulatorControlAnswer(status: 200, json: encode(state.stats))
        case ("GET", "/notifications"):
            return SimulatorControlAnswer(status: 200, json: encode(["notifications": state.notifications(token: call.query["token"])]))
        case ("POST", "/faults"):
            guard let fault = try? JSONDecoder().decode(FCMSimulatorFault.self, from: Data(call.body)) else {
                return SimulatorControlAnswer(
                    status: 400,
                    json: #"{"error":"a fault is {\"kind\": unregistered|sender_id_mismatch|quota_exceeded|unavailable|internal|unauthenticated|permission_denied|token_endpoint_unavailable, \"token\", \"count\", \"retry_after\", \"device\", \"every\"}"}"#)
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

    // MARK: The OAuth grant

    struct GrantRefusal: Error, CustomStringConvertible {
        var error = "invalid_grant"
        var description: String
    }

    /// Checks a token request as Google's endpoint does: the JWT-bearer grant type, an RS256 JWT
    /// signed by the account's key, `iss` the account, `aud` Google's token endpoint, a scope that covers
    /// FCM, `iat` not in the future and `exp` at most an hour after it and not passed.
    static func checkGrant(body: String, publicKey: _RSA.Signing.PublicKey, audience: String, clientEmail: String, now: Date) -> Result<String, GrantRefusal> {
        var form: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            if parts.count == 2 { form[parts[0]] = parts[1] }
        }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return .failure(GrantRefusal(error: "unsupported_grant_type", description: "Invalid grant_type: \(form["grant_type"] ?? "")"))
        }
        guard let assertion = form["assertion"] else { return .failure(GrantRefusal(description: "No assertion")) }
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { return .failure(GrantRefusal(description: "Invalid JWT: not three base64url parts")) }
        struct Header: Decodable { var alg: String }
        guard let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)), header.alg == "RS256" else {
            return .failure(GrantRefusal(description: "Invalid JWT: alg must be RS256"))
        }
        let signingInput = Array((parts[0] + "." + parts[1]).utf8)
        guard publicKey.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: signingInput, padding: .insecurePKCS1v1_5) else {
            return .failure(GrantRefusal(description: "Invalid JWT Signature."))
        }
        struct Claims: Decodable {
            var iss: String?
            var scope: String?
            var aud: String?
            var iat: Double?
            var exp: Double?
        }
        guard let claims = try? JSONDecoder().decode(Claims.self, from: Data(claimBytes)) else {
            return .failure(GrantRefusal(description: "Invalid JWT: claims are not JSON"))
        }
        guard claims.iss == clientEmail else { return .failure(GrantRefusal(error: "invalid_client", description: "The OAuth client was not found.")) }
        // Google's endpoint is the documented audience (google-auth always sends it); this endpoint's own URL is taken too.
        guard claims.aud == FCMServiceAccount.grantAudience || claims.aud == audience else {
            return .failure(GrantRefusal(description: "Invalid JWT: the audience is \(claims.aud ?? "missing"), not \(FCMServiceAccount.grantAudience)"))
        }
        let scopes = Set((claims.scope ?? "").split(separator: " ").map(String.init))
        guard !scopes.isDisjoint(with: [FCMServiceAccount.messagingScope, "https://www.googleapis.com/auth/cloud-platform"]) else {
            return .failure(GrantRefusal(error: "invalid_scope", description: "Invalid OAuth scope or ID token audience provided."))
        }
        let nowSeconds = now.timeIntervalSince1970
        guard let iat = claims.iat, let exp = claims.exp, iat.isFinite, exp.isFinite, iat <= nowSeconds + 60, exp > nowSeconds, exp - iat <= 3600,
            exp > iat
        else {
            return .failure(GrantRefusal(description: "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."))
        }
        return .success(clientEmail)
    }

    // MARK: messages:send

    static func send(
        method: String, project: String, authorization: String?, body: [UInt8], configuration: Configuration, state: FCMSimulatorState
    ) -> Response {
        func refuse(_ status: HTTPResponse.Status, _ canonical: String, _ message: String, code: String? = nil, field: String? = nil, retryAfter: Int? = nil) -> Response {
            var details: [[String: Any]] = []
            if let code { details.append(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code]) }
            if let field { details.append(["@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [["field": field, "description": message]]]) }
            var error: [String: Any] = ["code": status.code, "message": message, "status": canonical]
            if !details.isEmpty { error["details"] = details }
            state.rejected(code ?? canonical)
            var response = json(status, String(decoding: (try? JSONSerialization.data(withJSONObject: ["error": error], options: [.sortedKeys])) ?? Data(), as: UTF8.self))
            if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        }
        guard method == "messages:send" else { return refuse(.notFound, "NOT_FOUND", "Method not found.") }
        guard let authorization, authorization.hasPrefix("Bearer "), state.account(ofAccessToken: String(authorization.dropFirst(7)), now: Date()) != nil else {
            return refuse(.unauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
        }
        guard project == configuration.projectID else {
            return refuse(.forbidden, "PERMISSION_DENIED", "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).")
        }
        guard let root = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any], let message = root["message"] as? [String: Any] else {
            return refuse(.badRequest, "INVALID_ARGUMENT", "Invalid JSON payload received. Unknown name or missing \"message\".")
        }
        let targets = ["token", "topic", "condition", "fid"].filter { message[$0] != nil }
        guard targets.count == 1 else {
            return refuse(.badRequest, "INVALID_ARGUMENT", "Exactly one of token, topic, condition or fid must be set.", code: "INVALID_ARGUMENT", field: "message")
        }
        let target = (message[targets[0]] as? String) ?? ""
        if targets[0] == "token" || targets[0] == "fid" {
            guard !target.isEmpty, target.utf8.count <= 4096, target.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "_-:".contains($0)) }) else {
                return refuse(.badRequest, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", code: "INVALID_ARGUMENT", field: "message.token")
            }
        }
        var data: [String: String] = [:]
        if let raw = message["data"] {
            guard let object = raw as? [String: Any] else {
                return refuse(.badRequest, "INVALID_ARGUMENT", "Invalid value at 'message.data' (type.googleapis.com/google.firebase.fcm.v1.Message.DataEntry)", code: "INVALID_ARGUMENT", field: "message.data")
            }
            for (i, (key, value)) in object.sorted(by: { $0.key < $1.key }).enumerated() {
                guard let string = value as? String else {
                    return refuse(.badRequest, "INVALID_ARGUMENT", "Invalid value at 'message.data[\(i)].value' (TYPE_STRING)", code: "INVALID_ARGUMENT", field: "message.data[\(i)].value")
                }
                guard !FCMMessage.isReservedDataKey(key) else {
                    return refuse(.badRequest, "INVALID_ARGUMENT", "Invalid data key: \(key) is reserved", code: "INVALID_ARGUMENT", field: "message.data")
                }
                data[key] = string
            }
        }
        var dataBytes = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        if let notification = message["notification"] as? [String: Any] {
            dataBytes += notification.reduce(0) { $0 + $1.key.utf8.count + "\($1.value)".utf8.count }
        }
        // Google answers an oversized message with a bare 400: no FcmError detail.
        guard dataBytes <= FCMMessage.maximumDataBytes else { return refuse(.badRequest, "INVALID_ARGUMENT", "Message is too big") }
        let android = message["android"] as? [String: Any] ?? [:]
        let priority = android["priority"] as? String
        if let priority, !["normal", "high", "NORMAL", "HIGH"].contains(priority) {
            return refuse(.badRequest, "INVALID_ARGUMENT", "Invalid value at 'message.android.priority'", code: "INVALID_ARGUMENT", field: "message.android.priority")
        }
        let ttl = android["ttl"] as? String
        if let ttl {
            guard ttl.hasSuffix("s"), let seconds = Double(ttl.dropLast()), seconds.isFinite, (0...Double(FCMMessage.maximumTTLSeconds)).contains(seconds) else {
                return refuse(.badRequest, "INVALID_ARGUMENT", "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration)", code: "INVALID_ARGUMENT", field: "message.android.ttl")
            }
        }
        if let fault = state.fault(for: target) {
            switch fault.kind {
            case .unregistered:
                // A dead token stays dead (but for a benchmark's share of dead sends).
                if fault.every == nil { _ = state.addFault(FCMSimulatorFault(kind: .unregistered, token: target)) }
                return refuse(.notFound, "NOT_FOUND", "Requested entity was not found.", code: "UNREGISTERED")
            case .senderIDMismatch: return refuse(.forbidden, "PERMISSION_DENIED", "SenderId mismatch", code: "SENDER_ID_MISMATCH")
            case .quotaExceeded:
                let text = fault.device == true ? "Device message rate exceeded." : "Message rate exceeded."
                return refuse(.tooManyRequests, "RESOURCE_EXHAUSTED", text, code: "QUOTA_EXCEEDED", retryAfter: fault.retryAfter)
            case .unavailable: return refuse(.serviceUnavailable, "UNAVAILABLE", "The service is currently unavailable.", code: "UNAVAILABLE", retryAfter: fault.retryAfter)
            case .internal: return refuse(.internalServerError, "INTERNAL", "Internal error encountered.", code: "INTERNAL", retryAfter: fault.retryAfter)
            case .unauthenticated: return refuse(.unauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
            case .permissionDenied: return refuse(.forbidden, "PERMISSION_DENIED", "Firebase Cloud Messaging API has not been used in project \(project) before or it is disabled.")
            case .tokenEndpointUnavailable: break  // the token endpoint's, never a send's (`fault(for:)` skips it)
            }
        }
        if root["validate_only"] as? Bool == true {
            return json(.ok, #"{"name":"projects/\#(project)/messages/fake_message_id"}"#)
        }
        let name = "projects/\(project)/messages/0:\(state.nextMessageID())"
        state.record(FCMSimulatorRecord(
            token: target, name: name, data: data, priority: priority, ttl: ttl, collapseKey: android["collapse_key"] as? String))
        return json(.ok, #"{"name":"\#(name)"}"#)
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        SimulatorListeners.json(status, text, contentType: "application/json; charset=UTF-8")
    }

    static func encode(_ value: some Encodable) -> String { SimulatorListeners.encode(value) }
}
