public import Foundation
public import HeraldPushCore

extension PushType {
    /// The largest payload Apple accepts for this push type.
    public var maximumPayloadSize: Int { self == .voip ? 5_120 : 4_096 }
}

/// The two APNs environments and their hosts.
public enum APNsEnvironment: String, Sendable, CaseIterable, Codable {
    case production, sandbox

    /// Apple's HTTP/2 endpoint for this environment.
    public var defaultURL: URL {
        switch self {
        case .production: URL(string: "https://api.push.apple.com:443")!
        case .sandbox: URL(string: "https://api.sandbox.push.apple.com:443")!
        }
    }
}

/// One push to one device, in the terms of Apple's provider API.
public struct APNsNotification: Sendable, Hashable {
    /// The device token, hex; sent lowercase.
    public var deviceToken: String
    /// `apns-topic`: the bundle id (with a suffix for some push types).
    public var topic: String
    public var pushType: PushType
    public var priority: PushPriority
    /// `apns-expiration` in unix seconds; `0` means "deliver once or drop"; `nil` omits the header.
    public var expiration: Int?
    /// `apns-collapse-id`, at most 64 bytes.
    public var collapseID: String?
    /// `apns-id`: kept across retries so a delivery has one identity.
    public var apnsID: UUID
    /// The JSON payload (a JSON object with an `aps` dictionary).
    public var payload: [UInt8]

    public init(
        deviceToken: String,
        topic: String,
        pushType: PushType = .alert,
        priority: PushPriority = .immediate,
        expiration: Int? = nil,
        collapseID: String? = nil,
        apnsID: UUID = .random(),
        payload: [UInt8]
    ) {
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.apnsID = apnsID
        self.payload = payload
    }
}

extension DeviceAttributes {
    /// The APNs environment a device's token belongs to (`environment`; sandbox when absent).
    public var apnsEnvironment: APNsEnvironment {
        self["environment"].flatMap(APNsEnvironment.init(rawValue:)) ?? .sandbox
    }

    /// A device of `environment`'s builds.
    public init(apnsEnvironment environment: APNsEnvironment) {
        self.init(production: environment == .production)
    }
}
