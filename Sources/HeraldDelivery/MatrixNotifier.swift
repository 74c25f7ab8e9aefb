import Crypto
import Foundation
import HeraldCore
import HeraldPushCore
public import HeraldMatrix
import HeraldStore
import KasiaProtocol

/// The Matrix Push Gateway use case (`POST /_matrix/push/v1/notify`): each device of a
/// notification becomes a delivery of its Matrix app's Herald app, committed with the others
/// before the homeserver gets its answer, so a homeserver never retries a push Herald holds.
/// A pushkey needs no registration: the notify names it, and the store admits it. A token the
/// app registered another way gets nothing from a notify unless the app opts in
/// (`matrixReachesRegisteredDevices`), and every document a notify makes says it came from Matrix.
///
/// Rejected (so the homeserver deletes the pusher): a pushkey of an unknown `app_id`, one that is
/// malformed for its platform, and one a push service called dead (APNs's Unregistered or
/// BadDeviceToken, FCM's UNREGISTERED, a Web Push 404 or 410) after its pusher was set. A
/// repeated `(event_id, pushkey)` is accepted and not pushed again (Synapse re-POSTs on any
/// error or timeout).
public struct MatrixNotifier: Sendable {
    public let publisher: EventPublisher
    public let apps: MatrixApps
    /// Devices one notify may name (Synapse sends one; the rest is for other homeservers).
    public static let maximumDevices = 100
    /// The latest `pushkey_ts` accepted: the end of year 9999, in seconds.
    public static let maximumPushkeyTS: Int64 = 253_402_300_799
    /// How far ahead of Herald's clock a `pushkey_ts` may be and still count (clock skew).
    static let pushkeyTSLeeway: Int64 = 300

    /// Where a notify with no unread left in a room becomes a dismissal of the room for its
    /// devices (SPEC §15); nil sends none.
    public let readMarkers: ReadMarkers?

    public init(publisher: EventPublisher, apps: MatrixApps, readMarkers: ReadMarkers? = nil) {
        self.publisher = publisher
        self.apps = apps
        self.readMarkers = readMarkers
    }

    /// What a notify did.
    public struct Outcome: Sendable, Hashable {
        /// Pushkeys the homeserver should drop, each once, in the order given.
        public var rejected: [String]
        /// Deliveries committed.
        public var deliveries: Int
        /// Devices whose push for this event was committed before.
        public var deduplicated: Int
    }

    /// Validates the notification, admits its devices, commits a push for each, and says which
    /// pushkeys are rejected.
    /// - Throws: `Refusal` naming the field at fault (`notification.devices[0].pushkey`); nothing is committed then.
    /// - Parameter requestID: the HTTP request's id, kept with each event for its deliveries' log lines.
    public func notify(_ n: MatrixNotification, requestID: String? = nil) async throws -> Outcome {
        guard let devices = n.devices else { throw Refusal.missing("notification.devices") }
        guard !devices.isEmpty, devices.count <= Self.maximumDevices else {
            throw Refusal.invalid("notification.devices", "a notification names 1 to \(Self.maximumDevices) devices")
        }
        if let unread = n.counts?.unread, unread < 0 { throw Refusal.invalid("notification.counts.unread", "is a count (0 or more)") }
        if let missed = n.counts?.missedCalls, missed < 0 {
            throw Refusal.invalid("notification.counts.missed_calls", "is a count (0 or more)")
        }
        if let content = n.content, content != .null, content.objectFields == nil {
            throw Refusal.invalid("notification.content", "content is a JSON object")
        }
        // Each device checked before anything is written.
        let now = publisher.clock.now()
        var named: [(index: Int, app: MatrixApp, pusher: any MatrixPusher, device: NamedDevice)] = []
        var rejected: [String] = []
        for (i, device) in devices.enumerated() {
            let field = "notification.devices[\(i)]"
            guard let appID = device.appID else { throw Refusal.missing(field + ".app_id") }
            guard let pushkey = device.pushkey else { throw Refusal.missing(field + ".pushkey") }
            for (key, value) in [("data", device.data), ("tweaks", device.tweaks)] {
                if let value, value != .null, value.objectFields == nil { throw Refusal.invalid(field + "." + key, "\(key) is a JSON object") }
            }
            guard (0...Self.maximumPushkeyTS).contains(device.pushkeyTS ?? 0) else {
                throw Refusal.invalid(field + ".pushkey_ts", "is unix seconds from 0 to \(Self.maximumPushkeyTS)")
            }
            // A pusher is set when it is set, not later: a `pushkey_ts` more than a few minutes
            // ahead of now says nothing and counts as 0, so no notify can make a device outlive its
            // token's death (compare-and-delete by time) or bring a dead token back.
            let seconds = Int64(now.timeIntervalSince1970)
            let ts = (device.pushkeyTS ?? 0) > seconds + Self.pushkeyTSLeeway ? 0 : device.pushkeyTS ?? 0
            guard let app = apps.app(for: appID), let production = publisher.apps.read(app.app, \.production), let pusher = apps.pusher(for: app) else {
                rejected.append(pushkey)
                continue
            }
            let token: DeviceToken
            let values: DeviceAttributes
            do {
                (token, values) = try pusher.device(of: device, app: app)
            } catch {
                rejected.append(pushkey)
                continue
            }
            named.append((i, app, pusher, NamedDevice(
                app: app.app, token: token, attributes: DeviceAttributes(production: production).merging(values),
                registeredAt: Date(timeIntervalSince1970: TimeInterval(ts)))))
        }
        let reserved = try await admitWithinLimits(named.map { ($0.device, "notification.devices[\($0.index)].pushkey") })
        defer { for (app, count) in reserved { publisher.apps[app]?.admissions.release(count) } }
        let admitted = named.isEmpty ? [] : try await publisher.store.admit(named.map(\.device), now: now)
        var events: [NewEvent] = []
        var perApp: [String: (devices: Int, rejected: Int, events: [String])] = [:]
        for ((index, app, pusher, _), record) in zip(named, admitted) {
            let device = devices[index]
            guard let record else {
                rejected.append(device.pushkey!)
                perApp[app.pattern, default: (0, 0, [])].rejected += 1
                continue
            }
            perApp[app.pattern, default: (0, 0, [])].devices += 1
            // A device the app registered another way is not a Matrix pusher's: an unauthenticated
            // notify naming its token pushes nothing to it (nor says so), unless the app opts in.
            if record.registeredElsewhere, publisher.apps[app.app]?.matrixReachesRegisteredDevices != true { continue }
            guard publisher.platforms.contains(record.platform), let push = pusher.push(n, device: device, app: app) else { continue }
            var event = NewEvent(
                id: UUID.timeOrdered(at: now).lowercasedString, app: app.app, template: "matrix", push: push,
                expiresAt: now.addingTimeInterval(EventPublisher.defaultLifetime), devices: [record],
                dedupeKey: (n.eventID ?? "").isEmpty ? nil : Self.dedupeKey(app: app.app, eventID: n.eventID!, token: record.token))
            event.requestID = requestID
            perApp[app.pattern, default: (0, 0, [])].events.append(event.id)
            events.append(event)
        }
        let created = events.isEmpty ? [:] : try await publisher.commit(events, checkpoint: nil, now: now)
        // Nothing unread left in the room: it was read on one of the user's devices, and its
        // notifications leave the others (a background `herald.dismiss` push, up to now, in ms).
        if let readMarkers, n.counts?.unread == 0, let room = n.roomID, !room.isEmpty, room.unicodeScalars.count <= 256 {
            let reached = zip(named, admitted).compactMap { entry, record -> DeviceRecord? in
                guard let record, !record.registeredElsewhere || publisher.apps[entry.app.app]?.matrixReachesRegisteredDevices == true else { return nil }
                return record
            }
            for (app, devices) in Dictionary(grouping: reached, by: \.app) {
                try await readMarkers.dismiss(conversation: room, upTo: String(now.milliseconds), devices: devices, app: app)
            }
        }
        if let metrics = publisher.metrics {
            for (pattern, counts) in perApp {
                let skipped = counts.events.filter { created[$0] == nil }.count
                metrics.matrixNotify(app: pattern, devices: counts.devices, rejected: counts.rejected, deduplicated: skipped)
            }
        }
        var seen = Set<String>()
        return Outcome(
            rejected: rejected.filter { seen.insert($0).inserted }, deliveries: created.values.reduce(0, +),
            deduplicated: events.count - created.count)
    }

    /// Refuses (forbidden, `device_limit`, nothing written) a notify whose new pushkeys would take an app
    /// past its `max_devices`, as registration does: a notify needs no credentials, so the limit
    /// is what bounds the devices anyone can create through it.
    /// - Returns: the admissions reserved per app (its new pushkeys), for the caller to release
    ///   once they are written; counted with other requests' in flight, as registration's are.
    private func admitWithinLimits(_ devices: [(device: NamedDevice, field: String)]) async throws -> [String: Int] {
        var reserved: [String: Int] = [:]
        do {
            for (app, entries) in Dictionary(grouping: devices, by: \.device.app) {
                guard case let (maximum?, admissions)? = publisher.apps.read(app, { ($0.maximumDevices, $0.admissions) }) else { continue }
                let known = Set(try await publisher.store.devices(app: app, tokens: entries.map(\.device.token.value)).map(\.token))
                let new = entries.filter { !known.contains($0.device.token.value) }
                guard let first = new.first else { continue }
                let count = Set(new.map(\.device.token.value)).count
                let before = admissions.reserve(count)
                reserved[app] = count
                guard try await publisher.store.deviceCount(app: app) + before + count <= maximum else {
                    throw Refusal(.forbidden, code: "device_limit", message: "app \(app) has its maximum of \(maximum) devices", field: first.field)
                }
            }
        } catch {
            for (app, count) in reserved { publisher.apps[app]?.admissions.release(count) }
            throw error
        }
        return reserved
    }

    /// The event's dedupe key for one device: a hash, so the store holds no pushkey beside the token.
    static func dedupeKey(app: String, eventID: String, token: String) -> String {
        // `app \n eventID \n token` as bytes, and the digest's hex read from its bytes: one per
        // notified device, where interpolating and stepping the digest's iterator cost more than SHA-256.
        var input: [UInt8] = []
        input.reserveCapacity(app.utf8.count + eventID.utf8.count + token.utf8.count + 2)
        input.append(contentsOf: app.utf8)
        input.append(0x0A)
        input.append(contentsOf: eventID.utf8)
        input.append(0x0A)
        input.append(contentsOf: token.utf8)
        return "matrix:" + SHA256.hash(data: input).withUnsafeBytes { Hex.encode($0) }
    }
}
