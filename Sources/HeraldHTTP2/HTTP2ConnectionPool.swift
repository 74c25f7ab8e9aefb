import HeraldPushCore
package import Logging
package import NIOCore
import NIOHTTP2
import Synchronization

/// A pool of HTTP/2 connections to one push service host for one credential.
///
/// Each connection has a live stream limit (the server's SETTINGS_MAX_CONCURRENT_STREAMS,
/// which APNs lowers to 1 after a rejection); a request leases a stream on the least loaded
/// connection with room, or waits in FIFO order until one frees or its deadline passes.
/// Waiting requests are queued here, not suspended tasks: APNs drops the limit to 1 after
/// every rejection, so waiting is common and must be cheap.
/// A connection that receives GOAWAY drains and is replaced; one that closes is forgotten.
package final class HTTP2ConnectionPool: Sendable {
    struct Lease: Sendable {
        let connectionID: Int
        let handle: HTTP2ConnectionHandle
    }

    private enum Phase { case connecting, ready, draining }

    private struct Connection {
        var phase: Phase = .connecting
        var handle: HTTP2ConnectionHandle?
        var inFlight = 0
        /// The server's live SETTINGS_MAX_CONCURRENT_STREAMS; nil until its first SETTINGS.
        var maxStreams: Int?

        var isLive: Bool { phase != .draining }
    }

    /// A request waiting for a stream: dispatched by whoever frees one.
    private struct Waiter {
        var request: HTTP2Request
        var deadline: NIODeadline
        var promise: EventLoopPromise<HTTP2Response>
    }

    private struct State {
        var connections: [Int: Connection] = [:]
        var waiters = CircularBuffer<Waiter>()
        var nextID = 0
        var shutDown = false
        /// One timer for the waiters' deadlines: waiters are FIFO with one timeout, so the head's is the next.
        var waiterTimer: Scheduled<Void>?
    }

    private let state = Mutex(State())
    private let factory: HTTP2ConnectionFactory
    private let group: EventLoopGroup
    let size: Int
    private let logger: Logger

    package init(factory: HTTP2ConnectionFactory, group: EventLoopGroup, size: Int, logger: Logger) {
        self.factory = factory
        self.group = group
        self.size = max(1, size)
        self.logger = logger
    }

    /// Current per-connection view, for stats and tests.
    package struct Snapshot: Sendable {
        package var ready: Int
        package var connecting: Int
        package var draining: Int
        package var maxStreams: [Int]
        /// Streams in flight on each ready connection, in `maxStreams`' order.
        package var inFlight: [Int] = []
        package var waiting: Int
    }

    /// Connections established and not yet closed (ready or draining).
    package var openConnections: Int {
        state.withLock { s in s.connections.values.filter { $0.phase != .connecting }.count }
    }

    package var snapshot: Snapshot {
        state.withLock { s in
            var snap = Snapshot(ready: 0, connecting: 0, draining: 0, maxStreams: [], waiting: s.waiters.count)
            for c in s.connections.values {
                switch c.phase {
                case .connecting: snap.connecting += 1
                case .ready:
                    snap.ready += 1
                    snap.maxStreams.append(c.maxStreams ?? 0)
                    snap.inFlight.append(c.inFlight)
                case .draining: snap.draining += 1
                }
            }
            return snap
        }
    }

    // MARK: Submitting

    /// Sends `request` on the least-loaded connection with a free stream, or queues it (FIFO)
    /// until one frees or `deadline` passes. The future always completes: with the answer or an
    /// `TransportFailure`.
    package func submit(_ request: HTTP2Request, deadline: NIODeadline) -> EventLoopFuture<HTTP2Response> {
        var toOpen: [(Int, EventLoop)] = []
        var shutDown = false
        var queued: EventLoopPromise<HTTP2Response>?
        let lease: Lease? = state.withLock { s in
            if s.shutDown {
                shutDown = true
                return nil
            }
            if let lease = Self.takeLease(&s) { return lease }
            toOpen = self.connectionsToOpen(&s)
            let promise = group.any().makePromise(of: HTTP2Response.self)
            queued = promise
            s.waiters.append(Waiter(request: request, deadline: deadline, promise: promise))
            if s.waiterTimer == nil { self.armWaiterTimer(&s) }
            return nil
        }
        if shutDown { return group.any().makeFailedFuture(TransportFailure.connectFailed("client shut down")) }
        open(toOpen)
        if let lease {
            // On the connection's own loop: the answer completes it there, without another hop.
            let promise = lease.handle.channel.eventLoop.makePromise(of: HTTP2Response.self)
            dispatch(Waiter(request: request, deadline: deadline, promise: promise), on: lease)
            return promise.futureResult
        }
        return queued!.futureResult
    }

    /// A batch's streams go to one connection up to this many (or an even share of the batch
    /// over the ready connections, if larger) before the next connection is taken.
    static let batchStreamsPerConnection = 32

    /// Sends several requests as `submit` sends each, but those that find a stream go to their
    /// connection in one hop and one flush, filling a connection up to its share of the batch
    /// before the next: a caller with a batch in hand pays the event-loop hand-over and the
    /// socket write once. The futures are in the requests' order.
    package func submit(_ requests: [HTTP2Request], deadline: NIODeadline) -> [EventLoopFuture<HTTP2Response>] {
        guard requests.count > 1 else { return requests.map { submit($0, deadline: deadline) } }
        var toOpen: [(Int, EventLoop)] = []
        var leased: [(index: Int, lease: Lease)] = []
        var futures: [EventLoopFuture<HTTP2Response>?] = Array(repeating: nil, count: requests.count)
        let shutDown = state.withLock { s -> Bool in
            if s.shutDown { return true }
            // The batch fills one connection before the next, up to its share: its streams then
            // share that connection's socket writes and come back in its reads, where a stream
            // each on the least loaded connections took a write and a read each.
            let ready = max(1, s.connections.values.filter { $0.phase == .ready }.count)
            let share = max(Self.batchStreamsPerConnection, (requests.count + ready - 1) / ready)
            var filling: (lease: Lease, count: Int)?
            for (index, request) in requests.enumerated() {
                if let current = filling, current.count < share, Self.takeStream(&s, on: current.lease) {
                    leased.append((index, current.lease))
                    filling!.count += 1
                    continue
                }
                if let lease = Self.takeLease(&s) {
                    leased.append((index, lease))
                    filling = (lease, 1)
                    continue
                }
                if toOpen.isEmpty { toOpen = self.connectionsToOpen(&s) }
                let promise = group.any().makePromise(of: HTTP2Response.self)
                futures[index] = promise.futureResult
                s.waiters.append(Waiter(request: request, deadline: deadline, promise: promise))
                if s.waiterTimer == nil { self.armWaiterTimer(&s) }
            }
            return false
        }
        if shutDown {
            return requests.map { _ in group.any().makeFailedFuture(TransportFailure.connectFailed("client shut down")) }
        }
        open(toOpen)
        // One batch per connection, its promises on the connection's own loop.
        var byConnection: [Int: (lease: Lease, batch: [(HTTP2Request, EventLoopPromise<HTTP2Response>)])] = [:]
        for (index, lease) in leased {
            let promise = lease.handle.channel.eventLoop.makePromise(of: HTTP2Response.self)
            promise.futureResult.whenComplete { _ in self.release(lease) }
            futures[index] = promise.futureResult
            byConnection[lease.connectionID, default: (lease, [])].batch.append((requests[index], promise))
        }
        for (lease, batch) in byConnection.values { lease.handle.send(batch, deadline: deadline) }
        return futures.map { $0! }
    }

    private func dispatch(_ waiter: Waiter, on lease: Lease) {
        waiter.promise.futureResult.whenComplete { _ in self.release(lease) }
        lease.handle.send(waiter.request, deadline: waiter.deadline, promise: waiter.promise)
    }

    /// Returns a stream; the next waiter takes it.
    private func release(_ lease: Lease) {
        let dispatches = state.withLock { s -> [(Waiter, Lease)] in
            s.connections[lease.connectionID]?.inFlight -= 1
            return Self.serveWaiters(&s)
        }
        dispatch(dispatches)
        closeIfDrained(lease.connectionID)
    }

    /// Arms the timer for the head waiter's deadline. Called with the lock held.
    private func armWaiterTimer(_ s: inout State) {
        guard let head = s.waiters.first else {
            s.waiterTimer = nil
            return
        }
        s.waiterTimer = group.any().scheduleTask(deadline: head.deadline) { self.expireWaiters() }
    }

    private func expireWaiters() {
        let now = NIODeadline.now()
        let expired: [Waiter] = state.withLock { s in
            var out: [Waiter] = []
            while let head = s.waiters.first, head.deadline <= now { out.append(s.waiters.removeFirst()) }
            armWaiterTimer(&s)
            return out
        }
        for waiter in expired { waiter.promise.fail(TransportFailure.deadlineExceeded) }
    }

    /// The ready connection with the most room, or nil. One on the caller's own event loop comes
    /// first: its request then needs no hand-over to another thread.
    private static func takeLease(_ s: inout State) -> Lease? {
        var best: (id: Int, handle: HTTP2ConnectionHandle, rank: (otherLoop: Int, load: Double))?
        for (id, c) in s.connections {
            guard c.phase == .ready, let limit = c.maxStreams, c.inFlight < limit, let handle = c.handle else { continue }
            let rank = (otherLoop: handle.channel.eventLoop.inEventLoop ? 0 : 1, load: Double(c.inFlight) / Double(limit))
            if let current = best, current.rank <= rank { continue }
            best = (id, handle, rank)
        }
        guard let best else { return nil }
        s.connections[best.id]!.inFlight += 1
        return Lease(connectionID: best.id, handle: best.handle)
    }

    /// One more stream on `lease`'s connection, if it is still ready and has room.
    private static func takeStream(_ s: inout State, on lease: Lease) -> Bool {
        guard let c = s.connections[lease.connectionID], c.phase == .ready, let limit = c.maxStreams, c.inFlight < limit else { return false }
        s.connections[lease.connectionID]!.inFlight += 1
        return true
    }

    private static func serveWaiters(_ s: inout State) -> [(Waiter, Lease)] {
        var out: [(Waiter, Lease)] = []
        while !s.waiters.isEmpty, let lease = takeLease(&s) {
            out.append((s.waiters.removeFirst(), lease))
        }
        return out
    }

    private func dispatch(_ dispatches: [(Waiter, Lease)]) {
        for (waiter, lease) in dispatches { dispatch(waiter, on: lease) }
    }

    // MARK: Connections

    /// Connections to start so that `size` are connecting or ready.
    private func connectionsToOpen(_ s: inout State) -> [(Int, EventLoop)] {
        guard !s.shutDown else { return [] }
        let live = s.connections.values.filter(\.isLive).count
        var out: [(Int, EventLoop)] = []
        for _ in live..<size {
            let id = s.nextID
            s.nextID += 1
            let loop = group.next()
            s.connections[id] = Connection()
            out.append((id, loop))
        }
        return out
    }

    private func open(_ connections: [(Int, EventLoop)]) {
        for (id, loop) in connections { open(id: id, on: loop) }
    }

    private func open(id: Int, on loop: EventLoop) {
        let events = HTTP2ConnectionEvents(
            maxConcurrentStreamsChanged: { [weak self] limit in self?.settingsChanged(id, limit: limit) },
            retired: { [weak self] in self?.retire(id) },
            closed: { [weak self] in self?.closed(id) }
        )
        factory.connect(on: loop, events: events).whenComplete { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let handle):
                let dispatches = self.state.withLock { s -> [(Waiter, Lease)]? in
                    guard !s.shutDown, s.connections[id] != nil else { return nil }
                    s.connections[id]!.handle = handle
                    Self.promote(&s, id)
                    return Self.serveWaiters(&s)
                }
                if let dispatches { self.dispatch(dispatches) } else { handle.channel.close(promise: nil) }
                // TLS and the server's first SETTINGS have a deadline (three connect timeouts: a
                // loaded machine is slow, a silent peer silent for ever): a peer that accepts TCP
                // and says nothing more is closed, failing its waiters.
                handle.channel.eventLoop.scheduleTask(in: self.factory.connectTimeout * 3) { [weak self] in
                    let stuck = self?.state.withLock { $0.connections[id]?.phase == .connecting } ?? false
                    if stuck { handle.channel.close(promise: nil) }
                }
            case .failure(let error):
                self.connectFailed(id, error: error)
            }
        }
    }

    private func settingsChanged(_ id: Int, limit: Int) {
        let dispatches = state.withLock { s -> [(Waiter, Lease)] in
            guard s.connections[id] != nil else { return [] }
            s.connections[id]!.maxStreams = max(1, limit)
            Self.promote(&s, id)
            return Self.serveWaiters(&s)
        }
        dispatch(dispatches)
    }

    /// A connection is ready once it is connected and the server's first SETTINGS came, in either order.
    private static func promote(_ s: inout State, _ id: Int) {
        guard let c = s.connections[id], c.phase == .connecting, c.handle != nil, c.maxStreams != nil else { return }
        s.connections[id]!.phase = .ready
    }

    private func retire(_ id: Int) {
        var toOpen: [(Int, EventLoop)] = []
        state.withLock { s in
            guard s.connections[id] != nil else { return }
            s.connections[id]!.phase = .draining
            if !s.waiters.isEmpty { toOpen = self.connectionsToOpen(&s) }
        }
        logger.debug("HTTP/2 connection retired (GOAWAY or failed PING); draining", metadata: ["connection": "\(id)"])
        open(toOpen)
        closeIfDrained(id)
    }

    private func closeIfDrained(_ id: Int) {
        let channel: Channel? = state.withLock { s in
            guard let c = s.connections[id], c.phase == .draining, c.inFlight <= 0 else { return nil }
            return c.handle?.channel
        }
        channel?.close(promise: nil)
    }

    private func closed(_ id: Int) {
        var toOpen: [(Int, EventLoop)] = []
        let neverReady = state.withLock { s -> Bool in
            guard let c = s.connections[id] else { return false }
            if c.phase == .connecting { return true }
            s.connections[id] = nil
            if !s.waiters.isEmpty { toOpen = self.connectionsToOpen(&s) }
            return false
        }
        if neverReady {
            // TLS or HTTP/2 setup failed: a failed connect, not a reason to reconnect at once.
            connectFailed(id, error: TransportFailure.connectFailed("closed during TLS/HTTP/2 setup"))
        }
        open(toOpen)
    }

    private func connectFailed(_ id: Int, error: any Error) {
        logger.warning("push service connect failed", metadata: ["error": "\(error)"])
        let failed: [Waiter] = state.withLock { s in
            s.connections[id] = nil
            // With nothing ready or coming, the waiters would only wait for their deadline.
            let anyAlive = s.connections.values.contains(where: \.isLive)
            guard !anyAlive else { return [] }
            var out: [Waiter] = []
            while !s.waiters.isEmpty { out.append(s.waiters.removeFirst()) }
            return out
        }
        for waiter in failed {
            waiter.promise.fail(TransportFailure.connectFailed("\(error)"))
        }
    }

    /// Closes every connection and fails every waiter.
    package func shutdown() async {
        let (channels, waiters): ([Channel], [Waiter]) = state.withLock { s in
            s.shutDown = true
            s.waiterTimer?.cancel()
            s.waiterTimer = nil
            let channels = s.connections.values.compactMap(\.handle?.channel)
            var waiters: [Waiter] = []
            while !s.waiters.isEmpty { waiters.append(s.waiters.removeFirst()) }
            return (channels, waiters)
        }
        for waiter in waiters {
            waiter.promise.fail(TransportFailure.connectFailed("client shut down"))
        }
        for channel in channels { try? await channel.close() }
    }
}
