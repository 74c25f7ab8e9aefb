public import Foundation
public import HeraldAPNsCore
public import HeraldHTTP2
import HeraldPushCore
public import Logging
public import NIOCore
import NIOHPACK
import NIOPosix

/// How an `APNsClient` reaches APNs.
public struct APNsClientConfiguration: Sendable {
    /// The APNs host; Apple's for the environment unless overridden (a simulator).
    public var url: URL
    /// Extra PEM trust roots for that host, e.g. a simulator's CA.
    public var trustRootsPEMFile: String?
    /// Extra trust roots as PEM text, e.g. an in-process simulator's CA.
    public var trustRootsPEM: [String] = []
    /// HTTP/2 connections per host (default 4). More connections mean fewer streams open on each:
    /// NIOHTTP2 removes a closed stream from a sorted buffer, so answers that come back out of
    /// order cost time in proportion to the streams open (Benchmarks/README.md, "APNs delivery").
    public var connections: Int = 4
    /// Each request's deadline, from `send` to the answer, queueing included (default 10 s).
    public var requestTimeout: Duration = .seconds(10)
    public var connectTimeout: Duration = .seconds(10)
    /// PING a connection quiet for this long; close it if no ACK within `pingTimeout`.
    public var pingInterval: Duration = .seconds(60)
    public var pingTimeout: Duration = .seconds(10)
    /// Whether TLS offers ALPN `h2`. Always true in use; tests turn it off to act like
    /// APNs clients that speak HTTP/2 by prior knowledge.
    var offersALPN = true
    /// The last stream id a connection uses before it is retired; tests lower it.
    var lastUsableStreamID = HTTP2ConnectionHandler.lastUsableStreamID

    public init(environment: APNsEnvironment, url: URL? = nil, trustRootsPEMFile: String? = nil) {
        self.url = url ?? environment.defaultURL
        self.trustRootsPEMFile = trustRootsPEMFile
    }
}

/// The APNs provider: sends typed notifications over a pool of HTTP/2 connections with
/// one shared JWT per key, and answers each with a typed, classified result.
///
/// ```swift
/// let client = try APNsClient(configuration: .init(environment: .sandbox), tokens: tokens, eventLoopGroup: group)
/// let result = try await client.send(notification)
/// switch result.action { case .done: … case .tokenDead(let since): … }
/// ```
public final class APNsClient: Sendable {
    public let configuration: APNsClientConfiguration
    /// The key's token source; share one between clients of the same key.
    public let tokens: APNsProviderTokenSource
    private let pool: HTTP2ConnectionPool
    private let logger: Logger
    /// How often a request that APNs never processed (GOAWAY, refused stream) is re-sent at once.
    private static let maximumUnprocessedRetries = 3

    public init(
        configuration: APNsClientConfiguration,
        tokens: APNsProviderTokenSource,
        eventLoopGroup: EventLoopGroup,
        logger: Logger = Logger(label: "herald.apns")
    ) throws {
        self.configuration = configuration
        self.tokens = tokens
        self.logger = logger
        let factory = try HTTP2ConnectionFactory(
            url: configuration.url, trustRootsPEMFile: configuration.trustRootsPEMFile, trustRootsPEM: configuration.trustRootsPEM,
            offersALPN: configuration.offersALPN,
            connectTimeout: configuration.connectTimeout, pingInterval: configuration.pingInterval,
            pingTimeout: configuration.pingTimeout, lastUsableStreamID: configuration.lastUsableStreamID)
        self.pool = HTTP2ConnectionPool(
            factory: factory, group: eventLoopGroup, size: configuration.connections, logger: logger)
    }

    /// HTTP/2 connections open to APNs.
    public var connectionsOpen: Int { pool.openConnections }

    /// Validates and sends one notification.
    /// - Throws: `APNsValidationError` when Apple would reject it; nothing is sent then.
    /// - Returns: the result; transport failures are results, never thrown.
    public func send(_ notification: APNsNotification) async throws(APNsValidationError) -> APNsResult {
        try notification.validate()
        return await sendValidated(notification)
    }

    /// Sends a notification already validated by the caller.
    public func sendValidated(_ notification: APNsNotification) async -> APNsResult {
        let deadline = NIODeadline.now() + TimeAmount(configuration.requestTimeout)
        var refreshedOnce = false
        var unprocessedRetries = 0
        let apnsIDString = notification.apnsID.lowercasedString
        while true {
            let token = await tokens.currentToken()
            let request = Self.makeRequest(notification, apnsID: apnsIDString, authorization: token.authorizationHeader)
            let response: HTTP2Response
            do {
                response = try await execute(request, deadline: deadline)
            } catch let failure as TransportFailure {
                if failure == .notProcessed, unprocessedRetries < Self.maximumUnprocessedRetries, NIODeadline.now() < deadline {
                    unprocessedRetries += 1
                    continue
                }
                return .transportFailure(failure)
            } catch {
                return .transportFailure(.connectionClosed)
            }
            let result = Self.result(from: response, apnsID: notification.apnsID, sentAs: apnsIDString)
            if case .refreshCredentials = result.action, !refreshedOnce {
                // A refused provider token: mint a new JWT (if the 20-minute floor allows) and retry once.
                refreshedOnce = true
                if tokens.refreshRequested(after: token) { continue }
            }
            return result
        }
    }

    /// Sends notifications already validated by the caller as one batch: their streams go to the
    /// pool together (one hop to each connection's event loop, one flush) and the batch waits once
    /// for every answer. The results are in the notifications' order. One the batch cannot settle
    /// — a stream the server never processed, a refused provider token after a refresh — is sent
    /// again on its own, as `sendValidated(_:)` would.
    public func sendValidated(_ notifications: [APNsNotification]) async -> [APNsResult] {
        guard notifications.count > 1 else { return notifications.isEmpty ? [] : [await sendValidated(notifications[0])] }
        let deadline = NIODeadline.now() + TimeAmount(configuration.requestTimeout)
        let token = await tokens.currentToken()
        let apnsIDs = notifications.map { $0.apnsID.lowercasedString }
        let requests = notifications.indices.map {
            Self.makeRequest(notifications[$0], apnsID: apnsIDs[$0], authorization: token.authorizationHeader)
        }
        let futures = pool.submit(requests, deadline: deadline)
        // Every future completes (an answer or a transport failure).
        let answers = (try? await EventLoopFuture.whenAllComplete(futures, on: futures[0].eventLoop).get()) ?? []
        var results = [APNsResult?](repeating: nil, count: notifications.count)
        var unprocessed: [Int] = []
        var refused: [Int] = []
        for (index, answer) in answers.enumerated() {
            switch answer {
            case .success(let response):
                let result = Self.result(from: response, apnsID: notifications[index].apnsID, sentAs: apnsIDs[index])
                if case .refreshCredentials = result.action { refused.append(index) }
                results[index] = result
            case .failure(let failure as TransportFailure):
                if failure == .notProcessed { unprocessed.append(index) }
                results[index] = .transportFailure(failure)
            case .failure:
                results[index] = .transportFailure(.connectionClosed)
            }
        }
        // A refused provider token: mint a new JWT (if the 20-minute floor allows) and send those again.
        let again = unprocessed + (!refused.isEmpty && tokens.refreshRequested(after: token) ? refused : [])
        if !again.isEmpty, NIODeadline.now() < deadline {
            await withTaskGroup(of: (Int, APNsResult).self) { group in
                for index in again { group.addTask { (index, await self.sendValidated(notifications[index])) } }
                for await (index, result) in group { results[index] = result }
            }
        }
        return results.map { $0! }
    }

    /// Sends a raw HTTP/2 request on the pool, bypassing validation (tools and tests).
    public func execute(_ request: HTTP2Request, deadline: NIODeadline) async throws -> HTTP2Response {
        try await pool.submit(request, deadline: deadline).get()
    }

    /// Closes every connection. Call before shutting the event loop group down.
    public func shutdown() async {
        await pool.shutdown()
    }

    /// Connections ready, connecting and draining, and their live stream limits.
    public var connectionStats: (ready: Int, connecting: Int, draining: Int, maxStreams: [Int], waiting: Int) {
        let s = pool.snapshot
        return (s.ready, s.connecting, s.draining, s.maxStreams, s.waiting)
    }

    static func makeRequest(_ n: APNsNotification, apnsID: String, authorization: String) -> HTTP2Request {
        var headers = HPACKHeaders()
        headers.reserveCapacity(8)
        headers.add(name: "authorization", value: authorization)
        headers.add(name: "apns-topic", value: n.topic)
        headers.add(name: "apns-push-type", value: n.pushType.rawValue)
        headers.add(name: "apns-priority", value: String(n.priority.rawValue))
        headers.add(name: "apns-id", value: apnsID, indexing: .nonIndexable)
        if let expiration = n.expiration { headers.add(name: "apns-expiration", value: String(expiration)) }
        if let collapseID = n.collapseID {
            headers.add(name: "apns-collapse-id", value: collapseID, indexing: .nonIndexable)
        }
        return HTTP2Request(path: "/3/device/" + APNsDeviceToken.lowercased(n.deviceToken), headers: headers, body: ByteBuffer(bytes: n.payload))
    }

    /// The latest 410 timestamp believed: the year 2286, in milliseconds.
    static let latestTimestampMilliseconds: Double = 1e13
    /// The longest `retry-after` honoured.
    static let maximumRetryAfterSeconds = 3_600

    /// Reads Apple's answer: status, `{"reason", "timestamp"}` body, `retry-after`.
    static func result(from response: HTTP2Response, apnsID: UUID, sentAs sent: String) -> APNsResult {
        if response.status == 200 {
            // APNs echoes the apns-id it was given; parse only one it chose itself.
            guard let echoed = response.headers.first(name: "apns-id"), echoed != sent else {
                return .accepted(apnsID: apnsID)
            }
            return .accepted(apnsID: UUID(uuidString: echoed) ?? apnsID)
        }
        var reason = APNsReason.other("HTTP \(response.status)")
        var timestamp: Date?
        // Apple's error body: `{"reason": "…", "timestamp": <ms>}` (timestamp with 410 only).
        if let body = response.body.readableBytesView.withContiguousStorageIfAvailable({ try? JSONValue(parsing: UnsafeRawBufferPointer($0)) }) ?? nil {
            if let text = body[path: ["reason"]]?.stringValue { reason = APNsReason(text) }
            let ms: Double? =
                switch body[path: ["timestamp"]] {
                case .int(let i): Double(i)
                case .unsigned(let u): Double(u)
                case .double(let d): d
                default: nil
                }
            // A peer's number: only a plausible time is believed (the store converts it to an integer).
            if let ms, ms.isFinite, (0...Self.latestTimestampMilliseconds).contains(ms) {
                timestamp = Date(timeIntervalSince1970: ms / 1000)
            }
        }
        // A hint, clamped to an hour: a huge or negative value must not schedule anything absurd.
        let retryAfter = response.headers.first(name: "retry-after").flatMap(Int.init).map {
            Duration.seconds(min(max($0, 0), Self.maximumRetryAfterSeconds))
        }
        return .rejected(status: response.status, reason: reason, timestamp: timestamp, retryAfter: retryAfter)
    }
}
