import HTTPTypes
import Logging
public import NIOCore
public import NIOHTTPTypes
import Synchronization

/// Bounds on the HTTP API's client connections: how many may be open, and how long a request may
/// take to arrive.
public struct ConnectionLimits: Sendable {
    /// Client connections open at once (`HERALD_MAX_CONNECTIONS`).
    public var maximumConnections: Int
    /// From a request's start to its last body byte (`HERALD_HTTP_REQUEST_TIMEOUT_SECONDS`): not
    /// reset by each byte, so a client that trickles a body cannot hold a connection for ever.
    public var requestTimeout: TimeAmount
    /// How long a keep-alive connection may wait between requests (`HERALD_HTTP_IDLE_TIMEOUT_SECONDS`);
    /// the next request then has `requestTimeout` on top.
    public var idleTimeout: TimeAmount
    /// From a request's last byte to its answer handed to the connection.
    public var answerTimeout: TimeAmount = .seconds(60)
    /// After an answer given before its request's body ended, how long the connection keeps
    /// reading (and dropping) what the client still sends before it closes; not reset by each byte.
    public var lingerTimeout: TimeAmount = .seconds(2)
    /// How much of such a body the connection reads and drops before it closes.
    public var lingerBytes = 1 << 20

    public init(maximumConnections: Int, requestTimeout: TimeAmount = .seconds(15), idleTimeout: TimeAmount = .seconds(30)) {
        self.maximumConnections = max(1, maximumConnections)
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
    }

    /// Descriptors kept back from client connections for the store, the push services' connections,
    /// the chain source and the process itself.
    public static func reserve(openFileLimit: Int) -> Int { max(128, openFileLimit / 4) }

    /// The most connections an open-file limit allows: what is left after the reserve.
    public static func ceiling(openFileLimit: Int) -> Int { max(1, openFileLimit - reserve(openFileLimit: openFileLimit)) }

    /// The default cap for an open-file limit: its ceiling, at most 100,000.
    public static func defaultMaximum(openFileLimit: Int) -> Int { min(100_000, ceiling(openFileLimit: openFileLimit)) }
}

/// Every open client connection and what it is doing, shared by all of them. Past the cap a new
/// connection takes the place of the one that has waited longest without a request in hand — idle,
/// or still sending its request — so a crowd of slow or silent clients cannot keep a fresh one out;
/// when every connection is busy answering, the new one gets a 503.
public final class ConnectionTable: Sendable {
    /// What a connection is doing.
    enum Phase: Sendable { case reading, answering, idle }

    private struct Entry {
        let channel: any Channel
        var phase: Phase
        /// When the phase began.
        var since: NIODeadline
    }

    private struct State {
        var nextID = 0
        var entries: [Int: Entry] = [:]
        /// Connections as they became evictable (reading or idle), oldest first; an element whose
        /// connection has moved on since is stale and skipped. Eviction takes from the front, so
        /// it costs no walk over every connection, whatever the cap.
        var candidates: [(id: Int, since: NIODeadline)] = []
        var head = 0
        var evicted = 0
        var refused = 0

        mutating func enqueue(_ id: Int, since: NIODeadline) {
            candidates.append((id, since))
            // Stale elements pile up when nothing is evicted: rebuild from the live ones now and then.
            if candidates.count - head > 2 * entries.count + 1_024 {
                candidates = entries.filter { $0.value.phase != .answering }.map { ($0.key, $0.value.since) }.sorted { $0.since < $1.since }
                head = 0
            }
        }

        /// The connection that has waited longest without a request in hand, taken out.
        mutating func takeOldestWaiting() -> Entry? {
            while head < candidates.count {
                let candidate = candidates[head]
                head += 1
                if head > 1_024, head * 2 > candidates.count {
                    candidates.removeFirst(head)
                    head = 0
                }
                guard let entry = entries[candidate.id], entry.phase != .answering, entry.since == candidate.since else { continue }
                entries[candidate.id] = nil
                return entry
            }
            return nil
        }
    }

    public let limits: ConnectionLimits
    private let state = Mutex(State())

    public init(limits: ConnectionLimits) { self.limits = limits }

    /// Client connections open now.
    public var open: Int { state.withLock { $0.entries.count } }
    /// Connections closed to make room for a new one, since start.
    public var evicted: Int { state.withLock { $0.evicted } }
    /// Connections answered 503 because every other one was busy, since start.
    public var refused: Int { state.withLock { $0.refused } }

    /// What a new connection may do.
    enum Admission { case admitted(id: Int, evict: (any Channel)?), refused }

    func admit(_ channel: any Channel) -> Admission {
        state.withLock { state in
            var evict: (any Channel)?
            if state.entries.count >= limits.maximumConnections {
                guard let victim = state.takeOldestWaiting() else {
                    state.refused += 1
                    return .refused
                }
                state.evicted += 1
                evict = victim.channel
            }
            state.nextID += 1
            let now = NIODeadline.now()
            state.entries[state.nextID] = Entry(channel: channel, phase: .reading, since: now)
            state.enqueue(state.nextID, since: now)
            return .admitted(id: state.nextID, evict: evict)
        }
    }

    func set(_ id: Int, _ phase: Phase) {
        state.withLock { state in
            guard state.entries[id] != nil else { return }
            let now = NIODeadline.now()
            state.entries[id]!.phase = phase
            state.entries[id]!.since = now
            if phase != .answering { state.enqueue(id, since: now) }
        }
    }

    func close(_ id: Int) {
        _ = state.withLock { $0.entries.removeValue(forKey: id) }
    }

    /// A fresh handler for one connection, placed after HTTP decoding.
    public func handler() -> ConnectionGuardHandler { ConnectionGuardHandler(table: self) }
}

/// Holds one client connection to its deadlines and its place in the `ConnectionTable`: a request
/// must arrive whole within `requestTimeout` of its start (the connection's opening, or the end of
/// the previous answer plus the idle time), and its answer must be handed over within
/// `answerTimeout`; past either, the connection closes.
///
/// A client that does not read its answers costs a bounded amount: at most
/// `maximumPipelinedRequests` requests may wait for their answers on one connection (one more
/// closes it, dropping the rest of what it sent), and while the connection cannot take more writes
/// (its unsent answers are past the channel's high watermark, 64 KiB) nothing more is read from
/// it and a new request closes it. A request answered before its body ended (a 400, 401, 413 or 429
/// given on the head) is answered with `Connection: close`, so the client does not send its next
/// request on this connection; then the connection closes in stages, as RFC 9112 §9.6 asks: its
/// output at once, after the answer, and its input once the client closes, `lingerTimeout` passes
/// or `lingerBytes` of the rest arrive, whichever is first. Closing at once would reset the client
/// still sending its body, and a reset can cost it the answer; waiting out a trickled body would
/// let a client hold the connection.
public final class ConnectionGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundIn = HTTPResponsePart
    public typealias OutboundOut = HTTPResponsePart

    private let table: ConnectionTable
    private var id: Int?
    /// When the connection closes unless it is re-armed first.
    private var closeAt: NIODeadline?
    /// The timer that checks `closeAt`, and when it fires: no later than `closeAt`, and no later
    /// than the shortest deadline a request or an answer sets, so moving `closeAt` later (every
    /// request's end and every answer) leaves it alone; it looks again when it fires. A timer set
    /// and cancelled at each request's end and each answer cost two of each per request.
    private var timer: (task: Scheduled<Void>, at: NIODeadline)?
    /// Requests read whose answers are not yet written (HTTP/1.1 may pipeline).
    private var unanswered = 0
    /// A request's head was read and its end not yet: its body is still arriving.
    private var receiving = false
    /// A read held back while the connection could not take more writes.
    private var readHeld = false
    /// Closed for what it sent: the rest of its parts are dropped.
    private var closing = false
    /// The answer being written was given before its request's body ended: the connection closes after it.
    private var closesAfterAnswer = false
    /// Body bytes dropped since the answer that closes the connection.
    private var dropped = 0
    /// The answer being written is for the request still arriving: every request read whole has
    /// its answer (answers go out in order, so one read whole would be answered first).
    private var answeringUnfinishedRequest: Bool { receiving && unanswered == 0 }
    /// Requests one connection may have waiting for their answers (HTTP/1.1 pipelining): each
    /// parsed request is kept until it is answered, so this bounds what a client that sends
    /// thousands per write and reads nothing costs.
    static let maximumPipelinedRequests = 16

    init(table: ConnectionTable) { self.table = table }

    /// Whether the connection was counted (or refused) yet: at activation, or when the handler
    /// joins an active channel.
    private var admitted = false

    public func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context: context) }
    }

    public func channelActive(context: ChannelHandlerContext) {
        admit(context: context)
        context.fireChannelActive()
    }

    private func admit(context: ChannelHandlerContext) {
        guard !admitted else { return }
        admitted = true
        switch table.admit(context.channel) {
        case .admitted(let id, let evict):
            self.id = id
            evict?.close(promise: nil)
            arm(context: context, in: table.limits.requestTimeout)
        case .refused:
            Self.refuse(context: context)
        }
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
        if let id { table.close(id) }
        id = nil
    }

    public func channelInactive(context: ChannelHandlerContext) {
        disarm()
        if let id { table.close(id) }
        id = nil
        context.fireChannelInactive()
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        guard !closing else {
            // Lingering: read and dropped, up to a bound.
            if case .body(let buffer) = part {
                dropped += buffer.readableBytes
                if dropped > table.limits.lingerBytes { context.close(promise: nil) }
            }
            return
        }
        switch part {
        case .head:
            // Too many requests waiting, or earlier answers sitting unsent: the client is not
            // reading what it asked for.
            guard context.channel.isWritable, unanswered < Self.maximumPipelinedRequests else {
                closing = true
                context.close(promise: nil)
                return
            }
            receiving = true
        case .end:
            receiving = false
            unanswered += 1
            if let id {
                table.set(id, .answering)
                arm(context: context, in: table.limits.answerTimeout)
            }
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var response) where answeringUnfinishedRequest && response.status.kind != .informational:
            // Answered before its body ended: the client is told the connection closes after this
            // answer, so it opens a new one for its next request instead of losing it on this one.
            closesAfterAnswer = true
            response.headerFields[.connection] = "close"
            context.write(wrapOutboundOut(.head(response)), promise: promise)
        case .end where closesAfterAnswer || answeringUnfinishedRequest:
            context.writeAndFlush(data, promise: promise)
            linger(context: context)
        case .end:
            unanswered = max(0, unanswered - 1)
            if unanswered == 0, let id {
                table.set(id, .idle)
                arm(context: context, in: table.limits.idleTimeout + table.limits.requestTimeout)
            }
            context.write(data, promise: promise)
        case .head, .body:
            context.write(data, promise: promise)
        }
    }

    /// The staged close after an answer given before its request's body ended: output shut once
    /// the answer is out (NIO waits for the pending writes), the rest of the body read and dropped
    /// until the client closes (then NIO closes the channel) or a bound is reached.
    private func linger(context: ChannelHandlerContext) {
        closing = true
        if let id { table.set(id, .idle) }
        context.close(mode: .output, promise: nil)
        arm(context: context, in: table.limits.lingerTimeout)
    }

    /// Reads wait while the connection cannot take more writes.
    public func read(context: ChannelHandlerContext) {
        guard context.channel.isWritable else {
            readHeld = true
            return
        }
        context.read()
    }

    public func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, readHeld {
            readHeld = false
            context.read()
        }
        context.fireChannelWritabilityChanged()
    }

    private func arm(context: ChannelHandlerContext, in amount: TimeAmount) {
        let now = context.eventLoop.now
        let closeAt = now + amount
        self.closeAt = closeAt
        if let timer, timer.at <= closeAt { return }
        timer?.task.cancel()
        schedule(context.channel, now: now)
    }

    private func schedule(_ channel: any Channel, now: NIODeadline) {
        guard let closeAt else { return }
        let limits = table.limits
        let at = min(closeAt, now + min(limits.answerTimeout, limits.idleTimeout + limits.requestTimeout))
        let handler = NIOLoopBound(self, eventLoop: channel.eventLoop)
        timer = (channel.eventLoop.scheduleTask(deadline: at) { handler.value.timerFired(channel) }, at)
    }

    private func timerFired(_ channel: any Channel) {
        timer = nil
        let now = channel.eventLoop.now
        guard let closeAt, now < closeAt else { return channel.close(promise: nil) }
        schedule(channel, now: now)
    }

    private func disarm() {
        timer?.task.cancel()
        timer = nil
        closeAt = nil
    }

    /// Every connection is busy answering: this one gets a 503 and is closed.
    private static func refuse(context: ChannelHandlerContext) {
        let body = ByteBuffer(string: #"{"error":{"code":"overloaded","message":"too many connections; try again shortly"}}"#)
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.contentLength] = String(body.readableBytes)
        fields[.connection] = "close"
        fields[.retryAfter] = "1"
        context.write(NIOAny(HTTPResponsePart.head(HTTPResponse(status: .serviceUnavailable, headerFields: fields))), promise: nil)
        context.write(NIOAny(HTTPResponsePart.body(body)), promise: nil)
        let channel = context.channel
        context.writeAndFlush(NIOAny(HTTPResponsePart.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
