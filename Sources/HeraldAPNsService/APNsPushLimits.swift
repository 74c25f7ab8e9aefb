import Foundation
import HeraldAPNsCore
public import HeraldCore
import HeraldPushCore

/// Apple's rules, as APNs answers them (size for the push type, an `aps` dictionary, what the push
/// type requires), on a stand-in device and topic: the device and the app's topic are checked
/// where they are known.
public struct APNsPushLimits: PushLimits {
    public init() {}

    /// - Throws: `TemplateError` naming `fields` (the payload), `fields.push_type`, `priority` or
    ///   `collapse_id`.
    public func check(_ push: RenderedPush) throws(TemplateError) {
        let probe = APNsNotification(
            deviceToken: Self.standInToken, topic: push.pushType.stubTopic, pushType: push.pushType, priority: push.priority,
            collapseID: push.collapseID, apnsID: Self.standInID, payload: push.payload)
        do {
            try probe.validate()
        } catch {
            let field = switch error.field {
            case "push_type": "fields.push_type"
            case "priority": "priority"
            case "collapse_id": "collapse_id"
            default: "fields"
            }
            throw TemplateError(field: field, message: error.message, isTooLarge: error.reason == .payloadTooLarge)
        }
    }

    /// The stand-in device, made once: building it and drawing a random apns-id per event were a
    /// twentieth of a batched event's CPU.
    private static let standInToken = String(repeating: "0", count: APNsDeviceToken.minimumLength)
    private static let standInID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0))
}

extension PushType {
    /// The topic a push of this type goes to for the stand-in app: the provider appends `.voip`
    /// for VoIP pushes and nothing for any other type, so other suffixed types stay refused.
    var stubTopic: String { self == .voip ? "herald.check.voip" : "herald.check" }
}
