public import Foundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Why a HeraldKit call failed.
public enum HeraldClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A watch key the builder refused before anything was sent.
    case invalidWatchKey(field: String, value: String, reason: String)
    /// Herald answered with an error (`{"error":{code, message, field}}`).
    case server(status: Int, code: String, message: String, field: String?)
    /// No answer: the network or the server is unreachable (after retries).
    case transport(String)
    /// An answer HeraldKit does not understand.
    case invalidResponse(String)
    /// Herald answered with another signing key than the one the app pinned: it is not replaced
    /// (pushes signed with it are refused) until the app decides (`SigningKeyPin.replace(with:)`).
    case signingKeyChanged(pinned: String, answered: String)

    /// `update` on a token Herald does not know: register instead.
    public var isNotRegistered: Bool {
        if case .server(404, _, _, _) = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .invalidWatchKey(let field, let value, let reason): "\(field): \(value): \(reason)"
        case .server(let status, let code, let message, let field): "HTTP \(status) \(code)\(field.map { " (\($0))" } ?? ""): \(message)"
        case .transport(let m): "transport: \(m)"
        case .invalidResponse(let m): "invalid response: \(m)"
        case .signingKeyChanged(let pinned, let answered): "signing key changed: pinned \(pinned.prefix(8))…, Herald answered \(answered.prefix(8))…"
        }
    }
}

/// What Herald knows of a device (`GET /v1/push/status`).
public struct RegistrationStatus: Hashable, Sendable {
    public var registered: Bool
    public var watchedAddresses: [String]
    public var lastSeen: Date?
}

/// Herald's registration API (`/v1/push/*`) over URLSession.
///
/// Every call here is idempotent (a registration replaces the watch set), so each is retried on
/// a transport error, 429 (after `Retry-After`) and 500/502/503/504, up to `maximumAttempts`.
public struct HeraldClient: Sendable {
    public struct Configuration: Sendable {
        /// Herald's base URL, e.g. `https://push.example.com`.
        public var baseURL: URL
        /// Sent as `Authorization: Bearer` when the app's registration policy needs a key.
        public var registrationKey: String?
        /// The app id, when the Herald instance serves several apps.
        public var app: String?
        public var maximumAttempts = 3
        /// The first retry's delay; doubled each time, capped at 30 s like `Retry-After`.
        public var retryDelay: TimeInterval = 0.5
        /// The device's keys for sealed pushes, registered as `push_keys` (nil: pushes come unsealed).
        public var pushKeys: SealedPushKeys?
        /// Where the app's signing key is pinned; each registration answer's key is checked against it.
        public var signingKeyPin: SigningKeyPin?

        public init(baseURL: URL, registrationKey: String? = nil, app: String? = nil) {
            self.baseURL = baseURL
            self.registrationKey = registrationKey
            self.app = app
        }
    }

    public let configuration: Configuration
    public let session: URLSession

    public init(configuration: Configuration, session: URLSession = .shared) {
        self.configuration = configuration
        self.session = session
    }

    /// Registers (or re-registers) a device; returns how many keys Herald watches for it.
    /// `ownership` signs the own `addresses` when the app's registration policy is `wallet`.
    /// `environment` is the APNs environment of the token, by default this build's
    /// (`APNsBuildEnvironment.current`); nil leaves it to the app's configuration in Herald (and is
    /// what a token of another platform sends).
    @discardableResult
    public func register(
        deviceToken: String, watchSet: WatchSet, platform: HeraldPlatform = .ios, environment: APNsBuildEnvironment? = APNsBuildEnvironment.current,
        deviceID: String? = nil,
        ownership: AddressOwnership? = nil
    ) async throws(HeraldClientError) -> Int {
        var body = try await watchSetBody(watchSet, deviceToken: deviceToken, ownership: ownership)
        body["device_token"] = deviceToken
        body["platform"] = platform.rawValue
        if let environment { body["environment"] = environment.rawValue }
        if let deviceID { body["device_id"] = deviceID }
        if let keys = configuration.pushKeys { body["push_keys"] = ["p256dh": keys.p256dh, "auth": keys.authSecret] }
        let answer = try await send("POST", "v1/push/register", body: body)
        try checkSigningKey(answer)
        return try Self.int(answer["watched_addresses"], "watched_addresses")
    }

    /// Registers this iPhone's APNs token as `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`
    /// hands it over: the bytes, sent as the lowercase hex Herald and Apple read. Otherwise as
    /// `register(deviceToken:watchSet:platform:environment:deviceID:ownership:)` with `platform` `.ios`.
    @discardableResult
    public func register(
        deviceToken: Data, watchSet: WatchSet, environment: APNsBuildEnvironment? = APNsBuildEnvironment.current, deviceID: String? = nil,
        ownership: AddressOwnership? = nil
    ) async throws(HeraldClientError) -> Int {
        try await register(
            deviceToken: Hex.encode(deviceToken), watchSet: watchSet, platform: .ios, environment: environment, deviceID: deviceID,
            ownership: ownership)
    }

    /// Pins the answer's signing key on first use, or checks it against the pinned one.
    func checkSigningKey(_ answer: [String: Any]) throws(HeraldClientError) {
        guard let pin = configuration.signingKeyPin else { return }
        guard let key = answer["signing_key"] as? String else { throw .invalidResponse("no signing_key") }
        try pin.check(key)
    }

    /// Replaces a registered device's watch set; `isNotRegistered` when Herald does not know it.
    @discardableResult
    public func update(deviceToken: String, watchSet: WatchSet, ownership: AddressOwnership? = nil) async throws(HeraldClientError) -> Int {
        var body = try await watchSetBody(watchSet, deviceToken: deviceToken, ownership: ownership)
        body["device_token"] = deviceToken
        let answer = try await send("PUT", "v1/push/update", body: body)
        return try Self.int(answer["watched_addresses"], "watched_addresses")
    }

    /// Removes a device (logout, wallet deleted); `false` when Herald did not know it.
    @discardableResult
    public func unregister(deviceToken: String) async throws(HeraldClientError) -> Bool {
        let answer = try await send("DELETE", "v1/push/unregister", body: ["device_token": deviceToken])
        guard let removed = answer["unregistered"] as? Bool else { throw .invalidResponse("no unregistered") }
        return removed
    }

    /// Tells Herald that `conversation` was read on this device up to `upTo` (the app's own
    /// position: a DAA score, a timestamp, a message id): the user's other devices take that
    /// conversation's notifications away (`DismissalPlanner`), this one gets nothing. Under the
    /// `wallet` policy `ownership` signs the marker with `address`, one of the device's proven own
    /// addresses; under `signed` the configuration's `registrationKey` is the JWT.
    /// - Returns: how many other devices are told.
    @discardableResult
    public func markRead(
        deviceToken: String, conversation: String, upTo: String, address: String? = nil, ownership: AddressOwnership? = nil,
        now: Date = Date()
    ) async throws(HeraldClientError) -> Int {
        let app = configuration.app ?? "default"
        let issuedAt = ownership?.timestamp ?? Int64(now.timeIntervalSince1970.rounded(.down))
        var body: [String: Any] = ["device_token": deviceToken, "conversation": conversation, "up_to": upTo, "issued_at": issuedAt]
        if let app = configuration.app { body["app"] = app }
        if let ownership, let address {
            body["address"] = address
            body["signature"] = try await ownership.signature(
                of: AddressOwnership.readMessage(app: app, deviceToken: deviceToken, conversation: conversation, upTo: upTo, issuedAt: issuedAt),
                by: address)
        }
        do {
            let answer = try await send("POST", "v1/push/read", body: body)
            return try Self.int(answer["devices"], "devices")
        } catch .server(403, "replayed_marker", _, _) {
            // A retry of a marker Herald took the first time (its answer was lost).
            return 0
        }
    }

    /// What Herald knows of a device.
    public func status(deviceToken: String) async throws(HeraldClientError) -> RegistrationStatus {
        var query = [URLQueryItem(name: "device_token", value: deviceToken)]
        if let app = configuration.app { query.append(URLQueryItem(name: "app", value: app)) }
        let answer = try await send("GET", "v1/push/status", query: query)
        guard let registered = answer["registered"] as? Bool else { throw .invalidResponse("no registered") }
        let lastSeen = (answer["last_seen"] as? NSNumber).map { Date(timeIntervalSince1970: $0.doubleValue) }
        return RegistrationStatus(registered: registered, watchedAddresses: answer["watched_addresses"] as? [String] ?? [], lastSeen: lastSeen)
    }

    func watchSetBody(_ set: WatchSet, deviceToken: String, ownership: AddressOwnership?) async throws(HeraldClientError) -> [String: Any] {
        var body = Self.watchSetBody(set)
        if let ownership, !set.addresses.isEmpty {
            // Herald's default app is "default" when none is named.
            body["addresses"] = try await ownership.proofs(of: set.addresses, app: configuration.app ?? "default", deviceToken: deviceToken)
        }
        return body
    }

    static func watchSetBody(_ set: WatchSet) -> [String: Any] {
        var body: [String: Any] = ["watched_addresses": set.watchedAddresses]
        if !set.addresses.isEmpty { body["addresses"] = set.addresses }
        if !set.contextualRoutes.isEmpty {
            body["contextual_routes"] = set.contextualRoutes.map { ["peer_address": $0.peerAddress, "aliases": $0.aliases] }
        }
        return body
    }

    static func int(_ value: Any?, _ name: String) throws(HeraldClientError) -> Int {
        guard let n = value as? NSNumber else { throw .invalidResponse("no \(name)") }
        return n.intValue
    }

    /// One call with retries; the answer's JSON object.
    func send(_ method: String, _ path: String, body: [String: Any]? = nil, query: [URLQueryItem] = []) async throws(HeraldClientError) -> [String: Any] {
        var components = URLComponents(url: configuration.baseURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)
        if !query.isEmpty { components?.queryItems = query }
        guard let url = components?.url else { throw .invalidResponse("bad base URL \(configuration.baseURL)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let key = configuration.registrationKey { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        if var body {
            if let app = configuration.app { body["app"] = app }
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        }
        var attempt = 0
        while true {
            attempt += 1
            switch await once(request, attempt: attempt) {
            case .answer(let object):
                return object
            case .failed(let error, let retryAfter):
                guard let retryAfter, attempt < configuration.maximumAttempts else { throw error }
                try? await Task.sleep(nanoseconds: UInt64(Self.clampedDelay(retryAfter) * 1_000_000_000))
            }
        }
    }

    enum Outcome {
        case answer([String: Any])
        /// `retryAfter` nil: not worth retrying.
        case failed(HeraldClientError, retryAfter: TimeInterval?)
    }

    func once(_ request: URLRequest, attempt: Int) async -> Outcome {
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            return .failed(.transport(String(describing: error)), retryAfter: backoff(attempt))
        }
        guard let http = response as? HTTPURLResponse else { return .failed(.invalidResponse("not HTTP"), retryAfter: nil) }
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        if (200..<300).contains(http.statusCode) {
            guard let object else { return .failed(.invalidResponse("HTTP \(http.statusCode) without a JSON object"), retryAfter: nil) }
            return .answer(object)
        }
        let error = object?["error"] as? [String: Any]
        let failure = HeraldClientError.server(
            status: http.statusCode, code: error?["code"] as? String ?? "http_\(http.statusCode)",
            message: error?["message"] as? String ?? HTTPURLResponse.localizedString(forStatusCode: http.statusCode),
            field: error?["field"] as? String)
        guard [429, 500, 502, 503, 504].contains(http.statusCode) else { return .failed(failure, retryAfter: nil) }
        return .failed(failure, retryAfter: Self.retryAfter(http.value(forHTTPHeaderField: "Retry-After")) ?? backoff(attempt))
    }

    /// A server's `Retry-After` in seconds: a number 0 or more; anything else (negative, `nan`,
    /// a date, garbage) is ignored. The server is not trusted to stop the app.
    static func retryAfter(_ header: String?) -> TimeInterval? {
        guard let header, let seconds = TimeInterval(header.trimmingCharacters(in: .whitespaces)), seconds.isFinite, seconds >= 0 else {
            return nil
        }
        return seconds
    }

    /// A wait between attempts, within 0…30 seconds whatever it was computed from.
    static func clampedDelay(_ seconds: TimeInterval) -> TimeInterval {
        guard seconds.isFinite else { return 30 }
        return min(max(seconds, 0), 30)
    }

    private func backoff(_ attempt: Int) -> TimeInterval {
        configuration.retryDelay * pow(2, Double(attempt - 1))
    }
}
