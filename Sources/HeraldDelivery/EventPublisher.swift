public import Foundation
public import HeraldCore
public import HeraldPushCore
public import HeraldStore
import KasiaProtocol

/// The publish use case, one for every way in (`/v1/events`, `:batch`, the compatibility routes,
/// the Kaspa chain source): validates and renders events, routes them to devices, and commits
/// events and deliveries in one transaction before it returns. It never waits on a push service:
/// the outbox is told after the commit.
public struct EventPublisher: Sendable {
    public let store: any DeviceRegistry & DeliveryQueue & FanoutQueue
    public let apps: AppDirectory
    /// Where committed deliveries go: idle lanes take theirs straight from the commit, the others
    /// are told to claim. Nil: nothing delivers (the deliveries wait in the store).
    public let outbox: Outbox?
    public let clock: any HeraldClock
    public let metrics: HeraldMetrics?
    /// The platforms that have a push provider: devices of other platforms get no delivery.
    public let platforms: Set<Platform>
    /// Their services' publish-time limits: every push is checked against each before anything
    /// is committed.
    public let pushLimits: [any PushLimits]
    /// The templates events name.
    public let templates: EventTemplateRegistry
    /// The most deliveries one publish request may create (refused as `tooLarge` over it); a
    /// fan-out job's are not counted (its memory is a page's, not its audience's).
    public let maximumDeliveriesPerRequest: Int
    /// An event routed by keys (or a Kasia event) whose key more devices watch than this commits
    /// with a fan-out job instead of a delivery per device; nil: never.
    public let fanoutThreshold: Int?
    /// Told when a job is committed.
    public let fanouts: FanoutExpander?
    /// The default threshold: below it one transaction with a row per device costs less than a job
    /// (Benchmarks/README.md, "Fan-out").
    public static let defaultFanoutThreshold = 500
    /// The default cap on deliveries per request.
    public static let defaultMaximumDeliveriesPerRequest = 100_000
    /// Events per batch.
    public static let maximumBatch = 1_000
    /// Entries in each `targets` list and in `exclude_device_ids`, and the characters of each entry.
    public static let maximumTargets = 1_000
    public static let maximumTargetLength = 256
    /// Default time to live: 24 h.
    public static let defaultLifetime: TimeInterval = 86_400
    /// The longest an event is kept: 30 days (no push service keeps a push longer); a later
    /// `expiration` is cut to it.
    public static let maximumLifetime: TimeInterval = 30 * 86_400
    /// How long a now-or-never push is tried: an `expiration` already past (0 included, as Apple
    /// reads `apns-expiration: 0`) asks for a prompt attempt, not a day's storage.
    public static let nowOrNeverLifetime: TimeInterval = 60

    public init(
        store: any DeviceRegistry & DeliveryQueue & FanoutQueue, apps: AppDirectory,
        outbox: Outbox? = nil, clock: any HeraldClock = SystemClock(),
        metrics: HeraldMetrics? = nil, platforms: Set<Platform> = [.ios], pushLimits: [any PushLimits] = [],
        templates: EventTemplateRegistry = .builtIn, maximumDeliveriesPerRequest: Int = EventPublisher.defaultMaximumDeliveriesPerRequest,
        fanoutThreshold: Int? = nil, fanouts: FanoutExpander? = nil
    ) {
        self.fanoutThreshold = fanoutThreshold
        self.fanouts = fanouts
        self.templates = templates
        self.maximumDeliveriesPerRequest = maximumDeliveriesPerRequest
        self.store = store
        self.apps = apps
        self.outbox = outbox
        self.clock = clock
        self.metrics = metrics
        self.platforms = platforms
        self.pushLimits = pushLimits
    }

    /// Where the routes note which request created each event, for the outbox's log lines.

    /// An event as a publisher sends it (the body of `/v1/events`).
    public struct Request: Sendable {
        public var app: String?
        public var template: String?
        public var targets: Targets?
        public var excludeDeviceIDs: [String]?
        public var fields: JSONValue?
        public var priority: Int?
        /// Unix seconds.
        public var expiration: Int64?
        public var collapseID: String?
        public var threadID: String?
        /// Presentation, as given (checked when the event is validated).
        public var sound: String?
        public var category: String?
        public var interruptionLevel: String?
        public var relevanceScore: Double?
        public var badge: Int64?
        /// A coalescing window in seconds (`coalesce_seconds`): per device and the event's one
        /// watch key, at most one push per window, a newer event replacing one still waiting.
        public var coalesceSeconds: Int64?

        public init(app: String?, template: String, fields: JSONValue) {
            self.app = app
            self.template = template
            self.fields = fields
        }
    }

    /// Who an event goes to.
    public struct Targets: Sendable {
        public var keys: [String]?
        public var deviceIDs: [String]?
        public var tokens: [String]?

        public init(keys: [String]? = nil, deviceIDs: [String]? = nil, tokens: [String]? = nil) {
            self.keys = keys
            self.deviceIDs = deviceIDs
            self.tokens = tokens
        }
    }

    /// An event committed: its id, its deliveries and the target tokens no device has.
    public struct Published: Sendable {
        public var event: NewEvent
        public var unknownTokens: [String]
    }

    /// Validates, routes and commits events (all or none), then tells the outbox. Every way in
    /// (`/v1/events`, `:batch`, the compatibility routes) publishes through here.
    /// - Throws: `Refusal` naming the field at fault (`events[3].fields.tx_id`); nothing is committed then.
    /// - Parameter requestID: the HTTP request's id, kept with each event for its deliveries' log lines.
    public func publish(
        _ bodies: [Request], publisherKey: String, fieldPrefix: (Int) -> String = { _ in "" }, requestID: String? = nil
    ) async throws -> [Published] {
        let started = ContinuousClock.now
        // One instant for the request: an event's expiry and its creation are counted from it.
        let now = clock.now()
        let drafts = try bodies.enumerated().map { i, body in try validate(body, field: fieldPrefix(i), publisherKey: publisherKey, now: now) }
        var prepared = try await route(drafts, limit: maximumDeliveriesPerRequest)
        for i in prepared.indices { prepared[i].event.requestID = requestID }
        _ = try await commit(prepared.map(\.event), checkpoint: nil, now: now)
        if let metrics {
            for p in prepared { metrics.eventsAccepted(template: p.event.template, deliveries: p.event.deviceRowIDs.count) }
            metrics.published(duration: ContinuousClock.now - started)
        }
        return prepared
    }

    /// Commits events (and a checkpoint), leasing deliveries to the lanes that wait for work, and
    /// hands the outbox what it must send. Returns the deliveries created per event id (events
    /// skipped as duplicates are absent). `now` is the instant the events' expiries count from.
    func commit(_ events: [NewEvent], checkpoint: ChainCheckpoint?, now: Date) async throws -> [String: Int] {
        let claim = outbox?.directClaim(apps: Set(events.map(\.app)))
        let result = try await store.enqueue(events, checkpoint: checkpoint, now: now, claim: claim)
        outbox?.enqueued(result, now: now)
        if events.contains(where: { $0.fanout != nil }) { fanouts?.jobCommitted() }
        return result.created
    }

    /// An event validated and rendered, not yet routed.
    struct Draft {
        var app: String
        var template: String
        var push: RenderedPush
        var kasia: KasiaEvent?
        /// Every device of the app (`agent.event` without targets).
        var allDevices: Bool
        var expiresAt: Date
        var keys: [WatchKey]
        /// In lookup form.
        var tokens: [String]
        var deviceIDs: [String]
        var excluded: Set<String>
        var prefix: String
        var coalescing: Coalescing?
    }

    /// When an event with `expiration` (unix seconds) stops being tried: a day when absent, at most
    /// 30 days ahead, and a minute for one already past (a now-or-never push).
    static func expiry(of expiration: Int64?, now: Date) -> Date {
        guard let expiration else { return now.addingTimeInterval(defaultLifetime) }
        let asked = TimeInterval(expiration) - now.timeIntervalSince1970
        return now.addingTimeInterval(asked <= 0 ? nowOrNeverLifetime : min(asked, maximumLifetime))
    }

    /// An option read by its template's rule; a bad one is the request's `invalid` at its field.
    private static func option<T>(_ prefix: String, _ read: () throws(TemplateError) -> T) throws -> T {
        do { return try read() } catch { throw Refusal.invalid(prefix + error.field, error.message) }
    }

    /// Validates and renders one event (no I/O).
    func validate(_ body: Request, field prefix: String, publisherKey: String, now: Date) throws -> Draft {
        let settings = try apps.publisherApp(key: publisherKey, requested: body.app, field: prefix + "app")
        let app = settings.id
        guard let name = body.template else { throw Refusal.missing(prefix + "template") }
        guard let fields = body.fields, fields.objectFields != nil else {
            throw Refusal.invalid(prefix + "fields", "fields is a JSON object")
        }
        let priority = try Self.option(prefix) { () throws(TemplateError) in try body.priority.map(EventOptions.priority) }
        let presentation = try Self.option(prefix) { () throws(TemplateError) in
            try PushPresentation.read(
                sound: body.sound, category: body.category, interruptionLevel: body.interruptionLevel, relevanceScore: body.relevanceScore,
                badge: body.badge, allowsCritical: settings.allowsCriticalAlerts)
        }
        let expiresAt = Self.expiry(of: body.expiration, now: now)
        guard let template = templates.template(named: name) else {
            throw Refusal.invalid(prefix + "template", "unknown template \(name); the templates are \(templates.names.joined(separator: ", "))")
        }
        let rendering = try template.render(TemplateEvent(
            name: name, fields: fields, prefix: prefix, app: settings, priority: priority, collapseID: body.collapseID, pushLimits: pushLimits))
        var push = rendering.push
        let kasia = rendering.kasia
        // The app's defaults for the template go under the event's own fields, on alerts only
        // (once: a template that rendered them leaves the event's fields alone to apply).
        let shown = push.pushType == .alert && !rendering.appliedPresentationDefaults
            ? settings.presentation.for(name).overridden(by: presentation) : presentation
        // Every template honours the event's options where its push type allows them (`custom`
        // took priority and collapse id while rendering), and every push is checked against the
        // push services' limits, size included, before anything is committed.
        do throws(TemplateError) {
            if !rendering.appliedOptions {
                push = try push.applying(EventOptions(priority: priority, collapseID: body.collapseID, threadID: body.threadID, presentation: shown))
                try pushLimits.check(push)
            } else if body.threadID != nil || !shown.isEmpty {
                push = try push.applying(EventOptions(threadID: body.threadID, presentation: shown))
                try pushLimits.check(push)
            }  // else the template checked it while rendering
        } catch {
            throw Refusal(refusedPush: error, prefix: prefix)
        }

        var keys: [WatchKey] = []
        for (name, list) in [("targets.keys", body.targets?.keys), ("targets.tokens", body.targets?.tokens),
                             ("targets.device_ids", body.targets?.deviceIDs), ("exclude_device_ids", body.excludeDeviceIDs)] {
            guard (list?.count ?? 0) <= Self.maximumTargets else {
                throw Refusal.invalid(prefix + name, "at most \(Self.maximumTargets) entries")
            }
            if let i = list?.firstIndex(where: { $0.isEmpty || $0.unicodeScalars.count > Self.maximumTargetLength }) {
                throw Refusal.invalid(prefix + name + "[\(i)]", "1 to \(Self.maximumTargetLength) characters")
            }
        }
        if let targets = body.targets {
            for (i, key) in (targets.keys ?? []).enumerated() {
                do { keys.append(try WatchKey(key)) } catch { throw Refusal.invalid(prefix + "targets.keys[\(i)]", "\(error)") }
            }
        } else if let kasia {
            guard KasiaRouting.lookupKey(for: kasia) != nil else {
                throw Refusal.unprocessable(prefix + "fields.recipient", "without targets, a \(name) event needs the recipient (a message: the sender and alias) to route by")
            }
        } else if !rendering.implicitKeys.isEmpty {
            keys = rendering.implicitKeys
        } else if !rendering.reachesAllDevicesUntargeted {
            throw Refusal.unprocessable(prefix + "targets", "a \(name) event needs targets")
        }
        return Draft(
            app: app, template: name, push: push, kasia: body.targets == nil ? kasia : nil,
            allDevices: body.targets == nil && rendering.reachesAllDevicesUntargeted, expiresAt: expiresAt, keys: keys,
            tokens: (body.targets?.tokens ?? []).map(DeviceToken.lookupForm), deviceIDs: body.targets?.deviceIDs ?? [],
            excluded: Set(body.excludeDeviceIDs ?? []), prefix: prefix,
            coalescing: try Self.coalescing(body, keys: keys, template: name, coalescible: rendering.coalescible, field: prefix + "coalesce_seconds"))
    }

    /// The event's coalescing, when it asks for it: a window of 1 to 3,600 seconds, on a template
    /// that allows it, for an event that targets exactly one watch key (coalescing is per device
    /// and key) and nothing else.
    static func coalescing(_ body: Request, keys: [WatchKey], template: String, coalescible: Bool, field: String) throws -> Coalescing? {
        guard let seconds = body.coalesceSeconds else { return nil }
        guard (1...Coalescing.maximumWindowSeconds).contains(seconds) else {
            throw Refusal.invalid(field, "coalesce_seconds is 1 to \(Coalescing.maximumWindowSeconds)")
        }
        guard coalescible else {
            throw Refusal.invalid(field, "\(template) events keep every push; coalesce_seconds is for custom events")
        }
        guard keys.count == 1, (body.targets?.tokens ?? []).isEmpty, (body.targets?.deviceIDs ?? []).isEmpty else {
            throw Refusal.invalid(field, "coalescing is per device and watch key: an event with coalesce_seconds targets exactly one key, and no tokens or device ids")
        }
        return Coalescing(key: keys[0].description, window: seconds * 1_000)
    }

    /// Routes validated events to their devices. Watch keys, tokens and device ids are looked up
    /// once per app for the whole batch, not once per event.
    /// - Parameter limit: the most deliveries the events may make together, checked as each is
    ///   routed: a publisher cannot fill the machine with one batch of untargeted events, and the
    ///   memory a request takes is bounded by the cap, not by devices × events.
    func route(_ drafts: [Draft], limit: Int? = nil) async throws -> [Published] {
        var byToken: [String: [String: DeviceRecord]] = [:]
        var byDeviceID: [String: [String: [DeviceRecord]]] = [:]
        var byKey: [String: [String: [DeviceRecord]]] = [:]
        let now = clock.now()
        let jobs = try await fanoutRoutes(drafts)
        for app in Set(drafts.map(\.app)) {
            let inApp = drafts.indices.filter { drafts[$0].app == app && jobs[$0] == nil }.map { drafts[$0] }
            byKey[app] = try await store.devices(app: app, watchingEach: inApp.flatMap { $0.keys.map(\.description) })
            let tokens = Array(Set(inApp.flatMap(\.tokens)))
            byToken[app] = Dictionary(try await store.devices(app: app, tokens: tokens).map { ($0.token, $0) }) { a, _ in a }
            let ids = Array(Set(inApp.flatMap(\.deviceIDs)))
            byDeviceID[app] = Dictionary(grouping: try await store.devices(app: app, deviceIDs: ids)) { $0.deviceID ?? "" }
        }
        // Every device of an app, read once per batch for the events that go to all of them.
        var allDevices: [String: [DeviceRecord]] = [:]
        var prepared: [Published] = []
        prepared.reserveCapacity(drafts.count)
        var total = 0
        for (index, draft) in drafts.enumerated() {
            if let job = jobs[index] {
                var event = NewEvent(
                    id: UUID.timeOrdered(at: now).lowercasedString, app: draft.app, template: draft.template, push: draft.push,
                    expiresAt: draft.expiresAt, deviceRowIDs: [])
                event.fanout = job
                event.coalescing = draft.coalescing
                prepared.append(Published(event: event, unknownTokens: []))
                continue
            }
            var devices: [DeviceRecord] = []
            if let kasia = draft.kasia, let key = KasiaRouting.lookupKey(for: kasia) {
                let candidates = try await store.devices(app: draft.app, watching: key)
                let sets = try await store.watchSets(rowIDs: candidates.map(\.rowID))
                // Under the wallet policy only what a device proved (its own addresses) and its routes count.
                let proven = apps.read(draft.app) { if case .wallet = $0.registration { true } else { false } } ?? false
                devices = candidates.filter { KasiaRouting.accepts(kasia, watchSet: sets[$0.rowID] ?? .empty, proven: proven) }
            }
            if draft.allDevices {
                if allDevices[draft.app] == nil { allDevices[draft.app] = try await store.devices(app: draft.app) }
                devices += allDevices[draft.app] ?? []
            }
            for key in draft.keys {
                devices += byKey[draft.app]?[key.description] ?? []
            }
            let known = byToken[draft.app] ?? [:]
            devices += draft.tokens.compactMap { known[$0] }
            devices += draft.deviceIDs.flatMap { byDeviceID[draft.app]?[$0] ?? [] }
            let unknownTokens = draft.tokens.filter { known[$0] == nil }
            let routed = devices.filter { platforms.contains($0.platform) && !($0.deviceID.map(draft.excluded.contains) ?? false) }
            total += routed.count
            if let limit, total > limit {
                let field = draft.prefix.isEmpty ? "targets" : String(draft.prefix.dropLast())
                throw Refusal(
                    .tooLarge, code: "too_many_deliveries", message: "this request would make more than \(limit) deliveries", field: field)
            }
            var event = NewEvent(
                id: UUID.timeOrdered(at: now).lowercasedString, app: draft.app, template: draft.template, push: draft.push,
                expiresAt: draft.expiresAt, devices: routed)
            event.coalescing = draft.coalescing
            prepared.append(Published(event: event, unknownTokens: unknownTokens))
        }
        return prepared
    }
}

extension EventPublisher {
    /// The drafts that go to a fan-out job, by index, with their routes: those routed by keys
    /// alone (or Kasia events) where a key has more watchers than the threshold. Each key is
    /// counted once per call, and no further than the threshold.
    func fanoutRoutes(_ drafts: [Draft]) async throws -> [Int: FanoutRoute] {
        guard let threshold = fanoutThreshold else { return [:] }
        func lookups(_ draft: Draft) -> [String] {
            guard draft.tokens.isEmpty, draft.deviceIDs.isEmpty, !draft.allDevices else { return [] }
            if let kasia = draft.kasia { return KasiaRouting.lookupKey(for: kasia).map { [$0] } ?? [] }
            var seen = Set<String>()
            return draft.keys.map(\.description).filter { seen.insert($0).inserted }
        }
        var counted: [String: Bool] = [:]
        var routes: [Int: FanoutRoute] = [:]
        for (index, draft) in drafts.enumerated() {
            let keys = lookups(draft)
            var large = false
            for key in keys {
                if counted[key] == nil { counted[key] = try await store.watcherCount(key: key, limit: threshold + 1) > threshold }
                large = large || counted[key] == true
            }
            guard large else { continue }
            routes[index] = FanoutRoute(keys: keys, excludedDeviceIDs: draft.excluded.sorted(), kasia: draft.kasia)
        }
        return routes
    }
}

/// Reads a template's `fields` object, naming the field at fault.
public struct FieldReader: Sendable {
    public var fields: JSONValue
    public var prefix: String

    public init(fields: JSONValue, prefix: String) {
        self.fields = fields
        self.prefix = prefix
    }

    private func value(_ key: String) -> JSONValue? {
        fields.objectFields?.first { $0.key == key }?.value
    }

    public func string(_ key: String, maximum: Int) throws -> String {
        guard let text = try optionalString(key) else { throw Refusal.missing(prefix + key) }
        guard !text.isEmpty, text.unicodeScalars.count <= maximum else {
            throw Refusal.invalid(prefix + key, "\(key) is a string of 1 to \(maximum) characters")
        }
        return text
    }

    public func optionalString(_ key: String) throws -> String? {
        switch value(key) {
        case nil, .null?: return nil
        case .string(let text)?:
            guard text.unicodeScalars.count <= 4_096 else { throw Refusal.invalid(prefix + key, "\(key) is at most 4,096 characters") }
            return text
        default: throw Refusal.invalid(prefix + key, "\(key) is a string")
        }
    }

    public func bool(_ key: String, default fallback: Bool) throws -> Bool {
        switch value(key) {
        case nil, .null?: return fallback
        case .bool(let b)?: return b
        default: throw Refusal.invalid(prefix + key, "\(key) is true or false")
        }
    }

    /// Unix seconds, given as a number or an RFC 3339 date (GhostTalk's `/apns/send` sends one);
    /// negative before 1970, as the RFC allows such dates.
    public func unixSeconds(_ key: String) throws -> Int64 {
        switch value(key) {
        case .int(let seconds)?: return seconds
        case .string(let text)?:
            guard let seconds = RFC3339.unixSeconds(text) else {
                throw Refusal.invalid(prefix + key, "\(key) is unix seconds or an RFC 3339 date")
            }
            return seconds
        case nil: throw Refusal.missing(prefix + key)
        default: throw Refusal.invalid(prefix + key, "\(key) is unix seconds or an RFC 3339 date")
        }
    }
}

/// The chain source's way in: the same routing and commit as `/v1/events` (the composition root
/// makes it the chain source's `KasiaEventSink`).
extension EventPublisher {
    /// Routes each Kasia event in every app (by recipient, own address and contextual route), deduplicated by txid per app (a txid
    /// accepted twice — two blocks, a reorg, a replayed gap — is pushed once), and commits the
    /// events with the chain checkpoint in one transaction.
    public func commit(_ events: [KasiaEvent], checkpoint: ChainCheckpoint) async throws -> Int {
        let now = clock.now()
        let expiresAt = now.addingTimeInterval(Self.defaultLifetime)
        var drafts: [Draft] = []
        for app in apps.apps {
            for event in events {
                drafts.append(Draft(
                    app: app.id, template: "kasia." + event.kind.rawValue, push: app.render(event), kasia: event,
                    allDevices: false, expiresAt: expiresAt, keys: [], tokens: [], deviceIDs: [], excluded: [], prefix: ""))
            }
        }
        var prepared = try await route(drafts)
        for i in prepared.indices {
            prepared[i].event.dedupeKey = "kaspa:\(prepared[i].event.app):\(drafts[i].kasia!.txID)"
        }
        let created = try await commit(prepared.map(\.event), checkpoint: checkpoint, now: now)
        for p in prepared where created[p.event.id] != nil {
            metrics?.eventsAccepted(template: p.event.template, deliveries: created[p.event.id] ?? 0)
        }
        return created.values.reduce(0, +)
    }
}

extension EventPublisher.Request {
    /// The body from parsed JSON (`JSONValue(parsing:)`, no `JSONDecoder` on the publish path),
    /// its fields named under `path` (`events[3]` in a batch). Null is absent; a field of the
    /// wrong type is refused naming its path.
    public init(json: JSONValue, at path: String = "") throws(JSONFieldError) {
        let body = try JSONObjectReader(json, at: path)
        app = try body.string("app")
        template = try body.string("template")
        if let value = body["targets"] {
            let targets = try JSONObjectReader(value, at: body.path(of: "targets"))
            self.targets = EventPublisher.Targets(
                keys: try targets.strings("keys"), deviceIDs: try targets.strings("device_ids"), tokens: try targets.strings("tokens"))
        }
        excludeDeviceIDs = try body.strings("exclude_device_ids")
        fields = body["fields"]
        priority = try body.integer("priority").map { Int($0) }
        expiration = try body.integer("expiration")
        collapseID = try body.string("collapse_id")
        threadID = try body.string("thread_id")
        coalesceSeconds = try body.integer("coalesce_seconds")
        sound = try body.string("sound")
        category = try body.string("category")
        interruptionLevel = try body.string("interruption_level")
        badge = try body.integer("badge")
        switch body["relevance_score"] {
        case nil, .null?: relevanceScore = nil
        case .int(let value)?: relevanceScore = Double(value)
        case .unsigned(let value)?: relevanceScore = Double(value)
        case .double(let value)?: relevanceScore = value
        default: throw JSONFieldError(field: body.path(of: "relevance_score"), message: "relevance_score is a number")
        }
    }
}
