public import Foundation
public import HeraldCore
public import HeraldPushCore

/// A registered device as stored.
public struct DeviceRecord: Hashable, Sendable {
    @usableFromInline
    struct Fields: Hashable, Sendable {
        @usableFromInline var rowID: Int64
        @usableFromInline var app: String
        @usableFromInline var platform: Platform
        @usableFromInline var token: String
        @usableFromInline var attributes: DeviceAttributes
        @usableFromInline var deviceID: String?
        @usableFromInline var createdAt: Date
        @usableFromInline var updatedAt: Date
        @usableFromInline var lastSeen: Date
        @usableFromInline var disabledReason: String?
        @usableFromInline var registeredElsewhere = false
    }

    /// One reference: a record rides inside every delivery of its device, copied with it.
    @usableFromInline var shared: SharedFields<Fields>

    /// The store's own id for the device.
    @inlinable public var rowID: Int64 {
        get { shared.fields.rowID }
        _modify { yield &shared.fields.rowID }
    }
    @inlinable public var app: String {
        get { shared.fields.app }
        _modify { yield &shared.fields.app }
    }
    @inlinable public var platform: Platform {
        get { shared.fields.platform }
        _modify { yield &shared.fields.platform }
    }
    /// Normalised (APNs: lowercase hex).
    @inlinable public var token: String {
        get { shared.fields.token }
        _modify { yield &shared.fields.token }
    }
    /// What its push service keeps for it (environment, token kind, subscription keys).
    @inlinable public var attributes: DeviceAttributes {
        get { shared.fields.attributes }
        _modify { yield &shared.fields.attributes }
    }
    /// An app-chosen stable id (SafeWhisper's X-Device-ID).
    @inlinable public var deviceID: String? {
        get { shared.fields.deviceID }
        _modify { yield &shared.fields.deviceID }
    }
    @inlinable public var createdAt: Date {
        get { shared.fields.createdAt }
        _modify { yield &shared.fields.createdAt }
    }
    /// The last registration; a 410 older than this keeps the device.
    @inlinable public var updatedAt: Date {
        get { shared.fields.updatedAt }
        _modify { yield &shared.fields.updatedAt }
    }
    @inlinable public var lastSeen: Date {
        get { shared.fields.lastSeen }
        _modify { yield &shared.fields.lastSeen }
    }
    /// Set when the push service called the token bad for its app and environment.
    @inlinable public var disabledReason: String? {
        get { shared.fields.disabledReason }
        _modify { yield &shared.fields.disabledReason }
    }
    /// Set by `admit` for a device another route registered (the native API, a compatibility
    /// route): a Matrix notify does not push to it unless its app says so.
    @inlinable public var registeredElsewhere: Bool {
        get { shared.fields.registeredElsewhere }
        _modify { yield &shared.fields.registeredElsewhere }
    }

    public init(
        rowID: Int64, app: String, platform: Platform, token: String, attributes: DeviceAttributes, deviceID: String? = nil,
        createdAt: Date, updatedAt: Date, lastSeen: Date, disabledReason: String? = nil
    ) {
        shared = SharedFields(Fields(
            rowID: rowID, app: app, platform: platform, token: token, attributes: attributes, deviceID: deviceID,
            createdAt: createdAt, updatedAt: updatedAt, lastSeen: lastSeen, disabledReason: disabledReason))
    }
}

/// What a registration says about a device.
public struct Registration: Sendable {
    public var app: String
    public var token: DeviceToken
    /// What its push service keeps for it: the environment of its builds, and the service's own
    /// values (a Web Push subscription's keys; its endpoint is `token`). The token's kind is
    /// added from `token` when stored.
    public var attributes: DeviceAttributes
    public var deviceID: String?
    public var watchSet: WatchSet
    /// The token is now the only one of `deviceID` (SafeWhisper's device switch): other devices
    /// of the app with that device id are removed in the same transaction.
    public var replacesDeviceTokens: Bool

    public init(
        app: String, token: DeviceToken, attributes: DeviceAttributes, deviceID: String? = nil, watchSet: WatchSet,
        replacesDeviceTokens: Bool = false
    ) {
        self.app = app
        self.token = token
        self.attributes = attributes
        self.deviceID = deviceID
        self.watchSet = watchSet
        self.replacesDeviceTokens = replacesDeviceTokens
    }

    /// The attributes as stored: with the token's kind.
    var storedAttributes: DeviceAttributes { attributes.setting(tokenKind: token.kind) }
}

/// A device a request names itself, with no registration step (a Matrix pusher's pushkey): what
/// a registration would say (no watch keys), and when the device's token was last registered
/// (the pusher's `pushkey_ts`; the epoch when not known).
public struct NamedDevice: Sendable {
    public var app: String
    public var token: DeviceToken
    /// As a registration's (`Registration.attributes`).
    public var attributes: DeviceAttributes
    public var registeredAt: Date

    public init(app: String, token: DeviceToken, attributes: DeviceAttributes, registeredAt: Date) {
        self.app = app
        self.token = token
        self.attributes = attributes
        self.registeredAt = registeredAt
    }

    /// The attributes as stored: with the token's kind.
    var storedAttributes: DeviceAttributes { attributes.setting(tokenKind: token.kind) }
}

extension NamedDevice {
    /// How far a device's `lastSeen` may lag before admitting it writes again: stale-device
    /// cleanup counts in days, and a notify should not cost a write transaction of its own.
    static let seenGranularity: TimeInterval = 3_600

    /// Admitting this device decided from what the store holds, without a write: `.some(nil)` for
    /// a dead token (or a disabled device), `.some(device)` when the stored device is current;
    /// nil when admitting must write (a new device, a revival, a later registration, new keys, an old `lastSeen`).
    /// A device another route registered (`ownedElsewhere`) is taken as it is: a notify never rewrites it.
    func admittedWithoutWrite(_ device: DeviceRecord?, deadAt: Int64?, now: Date, ownedElsewhere: Bool = false) -> DeviceRecord?? {
        if var device, ownedElsewhere {
            device.registeredElsewhere = true
            return .some(device.disabledReason == nil ? device : nil)
        }
        if let deadAt { return registeredAt.milliseconds <= deadAt ? .some(nil) : nil }
        guard let device else { return nil }
        if device.disabledReason != nil { return .some(nil) }
        let current =
            device.updatedAt >= registeredAt && device.platform == token.platform && device.attributes == storedAttributes
            && now.timeIntervalSince(device.lastSeen) < Self.seenGranularity
        return current ? .some(device) : nil
    }
}

/// The devices and what each watches: written by the registration routes, read by routing.
/// Every method is one transaction.
public protocol DeviceRegistry: Sendable {
    /// Creates or updates the device for each (app, token), replacing its watch set and reviving a
    /// disabled one; all in one transaction (bulk imports). Returns the records in order.
    func register(_ registrations: [Registration], now: Date) async throws -> [DeviceRecord]
    /// Replaces the watch set of a registered device; false when there is none.
    func updateWatchSet(app: String, token: String, watchSet: WatchSet, now: Date) async throws -> Bool
    /// Removes a device; false when there was none.
    func unregister(app: String, token: String) async throws -> Bool
    /// Removes every device of `app` with this app-chosen device id (a logout); returns how many.
    func unregister(app: String, deviceID: String) async throws -> Int
    /// A device and its watch set, marking it seen.
    func status(app: String, token: String, now: Date) async throws -> (DeviceRecord, WatchSet)?
    /// Enabled devices of `app` with `key` among their watch keys or own addresses, or with routes for it.
    func devices(app: String, watching key: String) async throws -> [DeviceRecord]
    /// `devices(app:watching:)` for several keys at once (a batch's events), by key.
    func devices(app: String, watchingEach keys: [String]) async throws -> [String: [DeviceRecord]]
    /// The watch sets of devices, by `DeviceRecord.rowID` (for routing rules that need them).
    func watchSets(rowIDs: [Int64]) async throws -> [Int64: WatchSet]
    /// Every enabled device of `app` (Claudiator's default target).
    func devices(app: String) async throws -> [DeviceRecord]
    /// Enabled devices of `app` by token.
    func devices(app: String, tokens: [String]) async throws -> [DeviceRecord]
    /// Enabled devices of `app` by their app-chosen `device_id`.
    func devices(app: String, deviceIDs: [String]) async throws -> [DeviceRecord]
    /// Removes devices not seen since `lastSeenBefore`; returns how many.
    func deleteStaleDevices(lastSeenBefore: Date) async throws -> Int
    /// How many devices `app` has (its `(app, token)` index counts them).
    func deviceCount(app: String) async throws -> Int
    /// The devices named by a request itself (a Matrix notify's pushkeys), in order: each is
    /// created when new, marked seen, and its `updatedAt` raised to `registeredAt` (so a 410 from
    /// before a later registration keeps it). Nil for a token a push service called dead at or
    /// after its `registeredAt` (`dead_tokens`), and for a disabled device; a token registered
    /// again after it died is revived. One transaction.
    func admit(_ devices: [NamedDevice], now: Date) async throws -> [DeviceRecord?]
}

extension DeviceRegistry {
    /// One lookup per key.
    public func devices(app: String, watchingEach keys: [String]) async throws -> [String: [DeviceRecord]] {
        var found: [String: [DeviceRecord]] = [:]
        for key in Set(keys) { found[key] = try await devices(app: app, watching: key) }
        return found
    }
}

extension DeviceRegistry {
    /// Creates or updates the device for (app, token), replacing its watch set; revives a disabled one.
    public func register(_ registration: Registration, now: Date) async throws -> DeviceRecord {
        try await register([registration], now: now)[0]
    }
}
