public import HeraldCore
public import HeraldPushCore
import HeraldWebPushCore

/// A push service's side of the Matrix push gateway: the kind of pusher it serves (a `matrix`
/// entry's `type`), the device a pushkey names, and the push each notification becomes.
public protocol MatrixPusher: Sendable {
    var kind: MatrixApp.Kind { get }
    /// The platform of the devices its pushkeys name.
    var platform: Platform { get }
    /// Whether a `matrix` entry of this kind may name `allowed_endpoints` (Web Push's hosts).
    var takesAllowedEndpoints: Bool { get }
    /// The device `device`'s pushkey names: its token and the values its service keeps.
    func device(of device: MatrixNotification.Device, app: MatrixApp) throws(MatrixPushkeyRefusal) -> (token: DeviceToken, attributes: DeviceAttributes)
    /// The push for one device, or nil when there is nothing to send.
    func push(_ n: MatrixNotification, device: MatrixNotification.Device, app: MatrixApp) -> RenderedPush?
}

extension MatrixApp.Kind {
    /// `pushers`' kinds as a refusal names them: "apns, fcm or webpush".
    public static func names(_ pushers: [any MatrixPusher]) -> String {
        let names = pushers.map(\.kind.rawValue)
        guard names.count > 1 else { return names.first ?? "none" }
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }
}

/// The built-in services' pushers, as Sygnal's pushkins read them: `MatrixApp.token(of:)` and
/// `MatrixPushBuilder`'s payloads.
public struct BuiltInMatrixPusher: MatrixPusher {
    public let kind: MatrixApp.Kind
    public let platform: Platform

    public init(_ kind: MatrixApp.Kind, platform: Platform) {
        self.kind = kind
        self.platform = platform
    }

    /// APNs (`apns`), FCM (`fcm`) and Web Push (`webpush`).
    public static let apns = BuiltInMatrixPusher(.apns, platform: .ios)
    public static let fcm = BuiltInMatrixPusher(.fcm, platform: .android)
    public static let webPush = BuiltInMatrixPusher(.webpush, platform: .web)
    public static let all: [any MatrixPusher] = [apns, fcm, webPush]

    public var takesAllowedEndpoints: Bool { kind == .webpush }

    public func device(of device: MatrixNotification.Device, app: MatrixApp) throws(MatrixPushkeyRefusal) -> (token: DeviceToken, attributes: DeviceAttributes) {
        let (token, keys) = try app.token(of: device)
        return (token, DeviceAttributes.empty.setting(webPushKeys: keys))
    }

    public func push(_ n: MatrixNotification, device: MatrixNotification.Device, app: MatrixApp) -> RenderedPush? {
        MatrixPushBuilder.push(n, device: device, app: app)
    }
}
