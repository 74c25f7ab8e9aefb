import Foundation
import HeraldAPNsCore

/// An event's delivery options, which every template honours where its push type allows them.
public struct EventOptions: Hashable, Sendable {
    /// `apns-priority`: 10, 5 or 1. Background pushes take only 5.
    public var priority: APNsPriority?
    /// Pushes with the same collapse id replace each other on the device (at most 64 bytes).
    public var collapseID: String?
    /// `aps.thread-id`: groups alerts on the device; alerts only.
    public var threadID: String?

    public init(priority: APNsPriority? = nil, collapseID: String? = nil, threadID: String? = nil) {
        self.priority = priority
        self.collapseID = collapseID
        self.threadID = threadID
    }

    public var isEmpty: Bool { priority == nil && collapseID == nil && threadID == nil }
}

extension RenderedPush {
    /// The longest `thread-id` accepted, in characters (Apple names no limit; this keeps it sane).
    public static let maximumThreadIDLength = 256

    /// A publisher's collapse id is 1 to 64 printable ASCII characters: it travels as a header
    /// (`apns-collapse-id`, Apple's 64 bytes; FCM's `collapse_key`), where bytes past ASCII are not safe.
    static func checkCollapseID(_ collapseID: String) throws(TemplateError) {
        let bytes = collapseID.utf8
        guard !bytes.isEmpty, bytes.count <= APNsNotification.maximumCollapseIDSize, bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            throw TemplateError(
                field: "collapse_id", message: "collapse_id is 1 to \(APNsNotification.maximumCollapseIDSize) printable ASCII characters")
        }
    }

    /// This push with `options` applied, checked against what the push type allows.
    /// - Throws: `TemplateError` naming the option (`priority`, `collapse_id`, `thread_id`).
    public func applying(_ options: EventOptions) throws(TemplateError) -> RenderedPush {
        var push = self
        if let priority = options.priority {
            // Apple refuses background pushes at priority 10 and throttles them at 1.
            if pushType == .background, priority != .considerate {
                throw TemplateError(field: "priority", message: "this template sends background pushes, which take priority 5 only")
            }
            push.priority = priority
        }
        if let collapseID = options.collapseID {
            try Self.checkCollapseID(collapseID)
            push.collapseID = collapseID
        }
        if let threadID = options.threadID {
            guard pushType == .alert else {
                throw TemplateError(field: "thread_id", message: "thread_id groups alerts; this template's pushes are \(pushType.rawValue)")
            }
            guard !threadID.isEmpty, threadID.unicodeScalars.count <= Self.maximumThreadIDLength else {
                throw TemplateError(field: "thread_id", message: "thread_id is 1 to \(Self.maximumThreadIDLength) characters")
            }
            guard var root = try? JSONDecoder().decode(JSONValue.self, from: Data(payload)), root[path: ["aps"]]?.objectFields != nil,
                var aps = root[path: ["aps"]]?.objectFields
            else {
                throw TemplateError(field: "thread_id", message: "the push has no aps dictionary to carry a thread-id")
            }
            aps.removeAll { $0.key == "thread-id" }
            aps.append(.init("thread-id", .string(threadID)))
            root[path: ["aps"]] = .object(aps)
            push.payload = root.encoded
        }
        return push
    }
}

/// What a push service refuses in a rendered push, checked when an event is published, before
/// anything is committed: each `PushService` gives its own (none: the service fits what it
/// carries when it sends, as FCM's and Web Push's providers shrink a push over their limits).
public protocol PushLimits: Sendable {
    /// - Throws: `TemplateError` naming the field at fault (`fields`, `priority`, …);
    ///   `isTooLarge` tells a push over a size limit apart.
    func check(_ push: RenderedPush) throws(TemplateError)
}

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

extension [any PushLimits] {
    /// Checks `push` against each service's limits in turn; the first refusal is thrown.
    public func check(_ push: RenderedPush) throws(TemplateError) {
        for limits in self { try limits.check(push) }
    }
}

extension APNsPushType {
    /// The topic a push of this type goes to for the stand-in app: the provider appends `.voip`
    /// for VoIP pushes and nothing for any other type, so other suffixed types stay refused.
    var stubTopic: String { self == .voip ? "herald.check.voip" : "herald.check" }
}

extension EventOptions {
    /// A publisher's `priority` (10, 5 or 1) as the push's.
    public static func priority(_ value: Int) throws(TemplateError) -> APNsPriority {
        guard let parsed = APNsPriority(rawValue: value) else { throw TemplateError(field: "priority", message: "priority is 10, 5 or 1") }
        return parsed
    }
}
