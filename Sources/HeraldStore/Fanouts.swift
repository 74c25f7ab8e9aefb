public import Foundation
public import HeraldCore
import HeraldPushCore
import KasiaProtocol

/// Who a fan-out job reaches: the devices of its app watching any of its keys (or with a
/// contextual route for one), less the excluded device ids and, for a Kasia event, those whose
/// watch set its routing refuses. Stored with the job, read again for every page.
public struct FanoutRoute: Hashable, Sendable {
    /// Lookup keys, in the order their watchers are expanded.
    public var keys: [String]
    public var excludedDeviceIDs: [String]
    /// The Kasia event whose routing each candidate's watch set must accept (only its kind,
    /// sender, recipient and alias are kept).
    public var kasia: KasiaEvent?

    public init(keys: [String], excludedDeviceIDs: [String] = [], kasia: KasiaEvent? = nil) {
        self.keys = keys
        self.excludedDeviceIDs = excludedDeviceIDs
        self.kasia = kasia
    }
}

/// Where a job's expansion has got to: every watcher of `keys[keyIndex]` up to device row
/// `row` (and of the keys before it) has its delivery.
public struct FanoutCursor: Hashable, Sendable {
    public var keyIndex: Int
    public var row: Int64

    public init(keyIndex: Int, row: Int64) {
        self.keyIndex = keyIndex
        self.row = row
    }

    public static let start = FanoutCursor(keyIndex: 0, row: 0)
}

/// An unfinished fan-out job with what its deliveries need.
public struct FanoutJob: Sendable {
    public var eventID: String
    public var app: String
    public var template: String
    public var push: RenderedPush
    public var expiresAt: Date
    public var createdAt: Date
    public var requestID: String?
    public var route: FanoutRoute
    public var cursor: FanoutCursor
    /// Watchers counted when the job started; nil before its first page.
    public var devices: Int?
    public var expanded: Int
    /// The event's coalescing, which each page's deliveries take.
    public var coalescing: Coalescing?

    public init(
        eventID: String, app: String, template: String, push: RenderedPush, expiresAt: Date, createdAt: Date, requestID: String?,
        route: FanoutRoute, cursor: FanoutCursor, devices: Int?, expanded: Int, coalescing: Coalescing? = nil
    ) {
        self.coalescing = coalescing
        self.eventID = eventID
        self.app = app
        self.template = template
        self.push = push
        self.expiresAt = expiresAt
        self.createdAt = createdAt
        self.requestID = requestID
        self.route = route
        self.cursor = cursor
        self.devices = devices
        self.expanded = expanded
    }
}

/// One page of a key's watchers, in device row order.
public struct FanoutCandidates: Sendable {
    /// The app's enabled devices among them (the routing filters still apply).
    public var devices: [DeviceRecord]
    /// The last device row the page covers: the next page starts after it.
    public var through: Int64
    /// No watcher of the key lies after `through`.
    public var exhausted: Bool

    public init(devices: [DeviceRecord], through: Int64, exhausted: Bool) {
        self.devices = devices
        self.through = through
        self.exhausted = exhausted
    }
}

/// A fan-out's progress, for `GET /v1/events/{id}`.
public struct FanoutProgress: Hashable, Sendable {
    /// Watchers counted when the job started (nil before); exact once `finished`.
    public var devices: Int?
    /// Deliveries made so far.
    public var expanded: Int
    public var finished: Bool

    public init(devices: Int?, expanded: Int, finished: Bool) {
        self.devices = devices
        self.expanded = expanded
        self.finished = finished
    }
}

/// Fan-out jobs: an event whose audience is large commits with a job (`NewEvent.fanout`) instead
/// of a delivery per device, and an expander turns it into deliveries a page at a time.
public protocol FanoutQueue: Sendable {
    /// Unfinished jobs, oldest first.
    func openFanouts(limit: Int) async throws -> [FanoutJob]
    /// Up to `limit` watchers of `key` (watch keys and contextual routes) after device row `row`,
    /// with `app`'s enabled devices among them.
    func fanoutCandidates(app: String, key: String, after row: Int64, limit: Int) async throws -> FanoutCandidates
    /// How many devices watch `key` at most (any app's; counting stops past `limit`).
    func watcherCount(key: String, limit: Int) async throws -> Int
    /// Commits one page: deliveries for `devices` and the job's cursor moved from `from` to `to`
    /// (finished when `finished`), in one transaction, leasing deliveries to `claim`'s lanes as
    /// `enqueue` does. Nil, with nothing written, when the job's cursor is no longer at `from` (another
    /// instance expanded the page) or the job is gone. `devices` counts its watchers on its first page.
    func expand(
        _ job: FanoutJob, from: FanoutCursor, to: FanoutCursor, finished: Bool, devices: [DeviceRecord], watchers: Int?, now: Date,
        claim: DirectClaim?
    ) async throws -> EnqueueResult?
    /// What each device of `rowIDs` has of `key` (an address), for a Kasia job's routing: one
    /// read of the key's rows, not of every device's whole watch set. Every row id has an entry.
    func kasiaRoutingFacts(rowIDs: [Int64], key: String) async throws -> [Int64: KasiaRoutingFacts]
    /// Devices of unfinished jobs not expanded yet (a job's watcher count less its expanded).
    func pendingFanoutDevices() async throws -> Int
    /// `app`'s deliveries due and not yet claimed, counted no further than `limit`: a job's next
    /// page waits while its last one is unclaimed.
    func unclaimedDeliveries(app: String, limit: Int, now: Date) async throws -> Int
}

extension FanoutRoute {
    /// The stored forms of the route: keys, excluded ids and the Kasia routing fields as JSON text.
    package var storedColumns: (keys: String, excluded: String, kasia: String?) {
        func json(_ value: JSONValue) -> String { String(decoding: value.encoded, as: UTF8.self) }
        let kasiaText = kasia.map { event -> String in
            var fields: [JSONValue.Field] = [.init("kind", .string(event.kind.rawValue)), .init("sender", .string(event.sender))]
            if let recipient = event.recipient { fields.append(.init("recipient", .string(recipient))) }
            if let alias = event.alias { fields.append(.init("alias", .string(alias))) }
            return json(.object(fields))
        }
        return (json(.array(keys.map(JSONValue.string))), json(.array(excludedDeviceIDs.map(JSONValue.string))), kasiaText)
    }

    /// The route from its stored columns; nil when they do not read as one.
    package init?(keys: String, excluded: String, kasia: String?) {
        func strings(_ text: String) -> [String]? {
            guard case .array(let items)? = try? JSONValue(parsing: Array(text.utf8)) else { return nil }
            let values = items.compactMap { item -> String? in if case .string(let text) = item { text } else { nil } }
            return values.count == items.count ? values : nil
        }
        guard let keyList = strings(keys), let excludedList = strings(excluded) else { return nil }
        var event: KasiaEvent?
        if let kasia {
            guard let fields = try? JSONValue(parsing: Array(kasia.utf8)).objectFields else { return nil }
            func field(_ name: String) -> String? {
                if case .string(let text)? = fields.first(where: { $0.key == name })?.value { text } else { nil }
            }
            guard let kind = field("kind").flatMap(KasiaEvent.Kind.init(rawValue:)), let sender = field("sender") else { return nil }
            event = KasiaEvent(kind: kind, txID: "", sender: sender, recipient: field("recipient"), alias: field("alias"), timestamp: 0, daaScore: 0)
        }
        self.init(keys: keyList, excludedDeviceIDs: excludedList, kasia: event)
    }
}

extension KasiaRoutingFacts {
    /// The facts of `rowIDs` from their `(device_row, role, key = the address)` watch-key rows (own
    /// ones, and any of the address) and `(device_row, alias)` route rows of the address.
    static func collect(
        rowIDs: [Int64], keys: [(row: Int64, role: String, isKey: Bool)], routes: [(row: Int64, alias: String)]
    ) -> [Int64: KasiaRoutingFacts] {
        var facts = Dictionary(rowIDs.map { ($0, KasiaRoutingFacts()) }) { a, _ in a }
        for (row, role, isKey) in keys {
            if role == "own" {
                facts[row]?.hasOwnAddresses = true
                if isKey { facts[row]?.ownsKey = true }
            } else if isKey {
                facts[row]?.watchesKey = true
            }
        }
        for (row, alias) in routes {
            let aliases = facts[row]?.aliases ?? []
            facts[row]?.aliases = aliases.union([alias])
        }
        return facts
    }
}
