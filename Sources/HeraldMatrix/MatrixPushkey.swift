import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldFCMCore
public import HeraldPushCore
public import HeraldWebPushCore
import KasiaProtocol

/// Why a pushkey cannot be a device of its app's platform: the homeserver is told to drop it.
public struct MatrixPushkeyRefusal: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

extension MatrixApp {
    /// The device token (and a subscription's keys) a pusher names: an APNs token from base64
    /// (or hex), an FCM registration token as it is, a Web Push subscription from `data.endpoint`,
    /// the pushkey (p256dh) and `data.auth`, its host one `allowed_endpoints` names.
    public func token(of device: MatrixNotification.Device) throws(MatrixPushkeyRefusal) -> (DeviceToken, WebPushKeys?) {
        guard let pushkey = device.pushkey, !pushkey.isEmpty else { throw MatrixPushkeyRefusal(description: "no pushkey") }
        do {
            switch kind {
            case .apns:
                var hex = pushkey
                if convertTokenToHex {
                    var base64 = pushkey
                    while base64.utf8.count % 4 != 0 { base64 += "=" }
                    guard let bytes = Data(base64Encoded: base64) else {
                        throw MatrixPushkeyRefusal(description: "an APNs pushkey is the token in base64")
                    }
                    hex = Hex.encode(bytes)
                }
                return (try APNsTokenRule().token(hex), nil)
            case .fcm:
                return (try FCMTokenRule().token(pushkey), nil)
            default:
                guard kind == .webpush else { throw MatrixPushkeyRefusal(description: "no pusher reads \(kind.rawValue) pushkeys here") }
                guard let endpoint = device.string("endpoint") else {
                    throw MatrixPushkeyRefusal(description: "a Web Push pusher's data has its endpoint")
                }
                guard let auth = device.string("auth") else { throw MatrixPushkeyRefusal(description: "a Web Push pusher's data has its auth") }
                let token = try WebPushTokenRule().token(endpoint)
                let host = try WebPushEndpoint(endpoint).host
                guard allows(host: host) else { throw MatrixPushkeyRefusal(description: "endpoint host \(host) is not among allowed_endpoints") }
                do {
                    return (token, try WebPushKeys(p256dh: pushkey, auth: auth))
                } catch {
                    throw MatrixPushkeyRefusal(description: error.description)
                }
            }
        } catch let refusal as MatrixPushkeyRefusal {
            throw refusal
        } catch {
            throw MatrixPushkeyRefusal(description: "\(error)")
        }
    }
}
