public import HeraldCore
import HeraldFCMCore
import HeraldPushCore

/// What FCM refuses in the data map a custom event gives Android devices verbatim (`fields.fcm.data`):
/// a key FCM reserves, or more than its 4,096 bytes.
public struct FCMPushLimits: PushLimits {
    public init() {}

    /// - Throws: `TemplateError` naming `fields.fcm.data.<key>` for a reserved key, or
    ///   `fields.fcm.data` (too large) for a map over FCM's limit.
    public func check(_ push: RenderedPush) throws(TemplateError) {
        guard let data = push.fcmData else { return }
        if let key = data.keys.sorted().first(where: FCMMessage.isReservedDataKey) {
            throw TemplateError(field: "fields.fcm.data.\(key)", message: "is a key FCM reserves")
        }
        let bytes = FCMMessage.dataBytes(of: data)
        guard bytes <= FCMMessage.maximumDataBytes else {
            throw TemplateError(field: "fields.fcm.data", message: "is \(bytes) bytes, over FCM's \(FCMMessage.maximumDataBytes)", isTooLarge: true)
        }
    }
}
