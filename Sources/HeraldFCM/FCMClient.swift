public import Foundation
public import HeraldFCMCore
import HeraldHTTP2
public import Logging
public import NIOCore
import NIOHPACK
import Synchronization
public import HeraldPushCore

/// How an `FCMClient` reaches FCM.
public struct FCMClientConfiguration: Sendable {
    /// FCM's host (`https://fcm.googleapis.com`) unless overridden (a simulator).
    public var url: URL
    /// Overrides the service account's `token_uri` (a simulator).
    public var tokenURL: URL?
    /// Extra PEM trust roots for both hosts, e.g. a simulator's CA.
    public var trustRootsPEMFile: String?
    /// Extra trust roots as PEM text, e.g. an in-process simulator's CA.
    public var trustRootsPEM: [String] = []
    /// HTTP/2 connections to the send host (default 2).
    public var connections: Int = 2
    /// Each request's deadline, queueing included (default 15 s, as Google recommends: a shorter
    /// one re-sends messages FCM is still accepting).
    public var requestTimeout: Duration = .seconds(15)
    public var connectTimeout: Duration = .seconds(10)
    public var pingInterval: Duration = .seconds(60)
    public var pingTimeout: Duration = .seconds(10)

    public static let defaultURL = URL(string: "https://fcm.googleapis.com")!

    public init(url: URL? = nil, tokenURL: URL? = nil, trustRootsPEMFile: String? = nil) {
        self.url = url ?? Self.defaultURL
        self.tokenURL = tokenURL
        self.trustRootsPEMFile = trustRootsPEMFile
    }
}

/// FCM HTTP v1 for one project: `messages:send` over the HTTP/2 pool, with an OAuth access
/// token from the service account's JWT grant, cached and refreshed before it expires.
public final class FCMClient: Sendable {
    public let configuration: FCMClientConfiguration
    public let projectID: String
    public let tokens: FCMAccessTokenSource
    private let pool: HTTP2ConnectionPool
    private let sendPath: String

    /// HTTP/2 connections open to FCM's send endpoint.
    public var connectionsOpen: Int { pool.openConnections }

    public init(
        configuration: FCMClientConfiguration, account: FCMServiceAccount, projectID: String? = nil,
        eventLoopGroup: EventLoopGroup, ledger: (any CredentialLedger)? = nil, logger: Logger = Logger(label: "herald.fcm"),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.configuration = configuration
        self.projectID = projectID ?? account.projectID
        guard FCMServiceAccount.isProjectID(self.projectID) else {
            throw HeraldConfigurationError(field: "project_id", message: "is not a Firebase project id")
        }
        self.sendPath = "/v1/projects/\(self.projectID)/messages:send"
        func pool(_ url: URL, size: Int) throws -> HTTP2ConnectionPool {
            let factory = try HTTP2ConnectionFactory(
                url: url, trustRootsPEMFile: configuration.trustRootsPEMFile, trustRootsPEM: configuration.trustRootsPEM,
                connectTimeout: configuration.connectTimeout,
                pingInterval: configuration.pingInterval, pingTimeout: configuration.pingTimeout)
            return HTTP2ConnectionPool(factory: factory, group: eventLoopGroup, size: size, logger: logger)
        }
        self.pool = try pool(configuration.url, size: configuration.connections)
        let tokenURL = configuration.tokenURL ?? account.tokenURI
        let tokenPool = try pool(tokenURL, size: 1)
        let deadline = configuration.requestTimeout
        self.tokens = FCMAccessTokenSource(account: account, ledger: ledger, logger: logger, now: now) { body in
            var headers = HPACKHeaders()
            headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
            let request = HTTP2Request(path: tokenURL.path.isEmpty ? "/" : tokenURL.path, headers: headers, body: ByteBuffer(string: body))
            let response = try await tokenPool.submit(request, deadline: .now() + TimeAmount(deadline)).get()
            return (response.status, Array(response.body.readableBytesView))
        } shutdown: {
            await tokenPool.shutdown()
        }
    }

    /// Validates and sends one message. A refused access token is refreshed and the message
    /// sent once more. Transport failures are results, never thrown.
    public func send(_ message: FCMMessage) async throws(FCMValidationError) -> FCMResult {
        try message.validate()
        var refreshed = false
        while true {
            let token: FCMAccessToken
            do {
                token = try await tokens.currentToken()
            } catch let error as FCMTokenEndpointUnavailable {
                return .transportFailure(error.description)
            } catch {
                return .rejected(FCMErrorAnswer(httpStatus: 401, status: "UNAUTHENTICATED", message: "no access token: \(error)"))
            }
            let result = await sendOnce(message, authorization: "Bearer " + token.value)
            // A refused access token (401, or a 403 without an FCM code) gets one fresh token
            // before the refusal counts against the app's credentials.
            if result.refusesAccessToken, !refreshed {
                refreshed = true
                tokens.invalidate(token)
                continue
            }
            return result
        }
    }

    private func sendOnce(_ message: FCMMessage, authorization: String) async -> FCMResult {
        var headers = HPACKHeaders()
        headers.add(name: "authorization", value: authorization)
        headers.add(name: "content-type", value: "application/json")
        let request = HTTP2Request(path: sendPath, headers: headers, body: ByteBuffer(bytes: message.encoded()))
        let deadline = NIODeadline.now() + TimeAmount(configuration.requestTimeout)
        do {
            let response = try await pool.submit(request, deadline: deadline).get()
            let body = Array(response.body.readableBytesView)
            guard response.status == 200 else {
                return .rejected(FCMErrorAnswer(httpStatus: response.status, body: body, retryAfterHeader: response.headers.first(name: "retry-after")))
            }
            return .accepted(answer: body)
        } catch {
            return .transportFailure("\(error)")
        }
    }

    /// Closes every connection. Call before shutting the event loop group down.
    public func shutdown() async {
        await pool.shutdown()
        await tokens.shutdown()
    }
}

/// The access token for one service account: exchanged from a fresh JWT grant when there is
/// none, when it is within `refreshMargin` of expiry, or when FCM refused it. One exchange at a
/// time; every sender waits for it.
public final class FCMAccessTokenSource: Sendable {
    public typealias Exchange = @Sendable (_ formBody: String) async throws -> (status: Int, body: [UInt8])

    public let account: FCMServiceAccount
    /// Refresh this long before the token expires (default 5 minutes).
    public let refreshMargin: TimeInterval
    /// Where instances on one database share the token (nil: this process alone).
    public let ledger: (any CredentialLedger)?
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let exchange: Exchange
    private let close: @Sendable () async -> Void

    private struct State {
        var current: FCMAccessToken?
        var pending: Task<FCMAccessToken, any Error>?
        /// The token FCM refused last: the ledger must not hand it back.
        var rejected: String?
        var exchanges = 0
    }
    private let state = Mutex(State())

    public init(
        account: FCMServiceAccount, refreshMargin: TimeInterval = 300, ledger: (any CredentialLedger)? = nil,
        logger: Logger = Logger(label: "herald.fcm"), now: @escaping @Sendable () -> Date = { Date() },
        exchange: @escaping Exchange, shutdown: @escaping @Sendable () async -> Void = {}
    ) {
        self.account = account
        self.refreshMargin = refreshMargin
        self.ledger = ledger
        self.logger = logger
        self.now = now
        self.exchange = exchange
        self.close = shutdown
    }

    /// How many grants this process exchanged (a token adopted from the ledger is not one).
    public var exchangeCount: Int { state.withLock { $0.exchanges } }

    public func currentToken() async throws -> FCMAccessToken {
        let now = self.now()
        enum Step { case use(FCMAccessToken), wait(Task<FCMAccessToken, any Error>) }
        let step: Step = state.withLock { s in
            if let current = s.current, current.expiresAt.timeIntervalSince(now) > refreshMargin { return .use(current) }
            if let pending = s.pending { return .wait(pending) }
            let task = Task { [self] in try await self.exchangeGrant(at: now) }
            s.pending = task
            return .wait(task)
        }
        switch step {
        case .use(let token): return token
        case .wait(let task): return try await task.value
        }
    }

    /// Forgets `token` (FCM refused it), so the next call exchanges a new grant.
    public func invalidate(_ token: FCMAccessToken) {
        state.withLock { s in
            if s.current?.value == token.value { s.current = nil }
            s.rejected = token.value
        }
    }

    /// A token from the ledger (another instance's, or one this process exchanges inside the
    /// ledger's lock), else from an exchange of its own. A ledger that fails (the database is
    /// away) costs one extra grant, never a send.
    private func exchangeGrant(at now: Date) async throws -> FCMAccessToken {
        defer { state.withLock { $0.pending = nil } }
        let token: FCMAccessToken
        if let ledger {
            let rejected = state.withLock { $0.rejected }
            do {
                token = try await ledger.accessToken(
                    account: account.clientEmail, now: now, refreshMargin: .seconds(refreshMargin), rejected: rejected
                ) { try await self.exchangeOwnGrant(at: now) }.token
            } catch let error as HeraldConfigurationError {
                throw error
            } catch let error as FCMTokenEndpointUnavailable {
                throw error
            } catch {
                logger.warning("the access-token ledger failed: exchanging a grant alone", metadata: ["error": "\(error)"])
                token = try await exchangeOwnGrant(at: now)
            }
        } else {
            token = try await exchangeOwnGrant(at: now)
        }
        state.withLock { $0.current = token }
        return token
    }

    private func exchangeOwnGrant(at now: Date) async throws -> FCMAccessToken {
        let status: Int
        let body: [UInt8]
        do {
            (status, body) = try await exchange(account.tokenRequestBody(issuedAt: now))
        } catch {
            throw FCMTokenEndpointUnavailable(detail: "\(error)")
        }
        // Google's outage (5xx, 429) is not a refusal of the account: its sends retry, nothing pauses.
        if status == 429 || (500...599).contains(status) {
            throw FCMTokenEndpointUnavailable(detail: "HTTP \(status)")
        }
        struct Answer: Decodable {
            var access_token: String
            var expires_in: Double?
            var token_type: String?
        }
        guard status == 200, let answer = try? JSONDecoder().decode(Answer.self, from: Data(body)), !answer.access_token.isEmpty else {
            throw HeraldConfigurationError(field: "credentials", message: "the token endpoint refused the grant (HTTP \(status)): \(String(decoding: body.prefix(300), as: UTF8.self))")
        }
        // A peer's number: believed between a minute and a day, else an hour.
        let lifetime = answer.expires_in.flatMap { $0.isFinite && (60...86_400).contains($0) ? $0 : nil } ?? 3600
        state.withLock { $0.exchanges += 1 }
        return FCMAccessToken(value: answer.access_token, expiresAt: now.addingTimeInterval(lifetime))
    }

    func shutdown() async { await close() }
}

/// Google's token endpoint did not answer, or answered 5xx or 429: an outage, not a refusal of
/// the account, so the sends waiting on it retry with back-off and the app's lane never pauses.
public struct FCMTokenEndpointUnavailable: Error, Sendable, CustomStringConvertible {
    public var detail: String
    public var description: String { "the OAuth token endpoint is unavailable: \(detail)" }
}
