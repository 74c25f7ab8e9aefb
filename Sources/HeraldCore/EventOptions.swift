import Foundation
public import HeraldPushCore

/// An event's delivery options, which every template honours where its push type allows them.
public struct EventOptions: Hashable, Sendable {
    /// `apns-priority`: 10, 5 or 1. Background pushes take only 5.
    public var priority: PushPriority?
    /// Pushes with the same collapse id replace each other on the device (at most 64 bytes).
    public var collapseID: String?
    /// `aps.thread-id`: groups alerts on the device; alerts only.
    public var threadID: String?
    /// Sound, category, interruption level, relevance and badge; alerts only.
    public var presentation: PushPresentation

    public init(priority: PushPriority? = nil, collapseID: String? = nil, threadID: String? = nil, presentation: PushPresentation = PushPresentation()) {
        self.priority = priority
        self.collapseID = collapseID
        self.threadID = threadID
        self.presentation = presentation
    }

    public var isEmpty: Bool { priority == nil && collapseID == nil && threadID == nil && presentation.isEmpty }
}

extension RenderedPush {
    /// The longest `thread-id` accepted, in characters (Apple names no limit; this keeps it sane).
    public static let maximumThreadIDLength = 256

    /// A publisher's collapse id is 1 to 64 printable ASCII characters: it travels as a header
    /// (`apns-collapse-id`, Apple's 64 bytes; FCM's `collapse_key`), where bytes past ASCII are not safe.
    static func checkCollapseID(_ collapseID: String) throws(TemplateError) {
        let bytes = collapseID.utf8
        guard !bytes.isEmpty, bytes.count <= CollapseID.maximumSize, bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else {
            throw TemplateError(
                field: "collapse_id", message: "collapse_id is 1 to \(CollapseID.maximumSize) printable ASCII characters")
        }
    }

    /// This push with `options` applied, checked against what the push type allows.
    /// - Throws: `TemplateError` naming the option (`priority`, `collapse_id`, `thread_id`, or a
    ///   presentation field on a push that is not an alert).
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
        if let field = options.presentation.givenFields.first {
            guard pushType == .alert else {
                throw TemplateError(field: field, message: "\(field) is for alerts; this template's pushes are \(pushType.rawValue)")
            }
            guard var root = try? JSONDecoder().decode(JSONValue.self, from: Data(push.payload)), let aps = root[path: ["aps"]]?.objectFields else {
                throw TemplateError(field: field, message: "the push has no aps dictionary to carry \(field)")
            }
            root[path: ["aps"]] = .object(options.presentation.applied(to: aps))
            push.payload = root.encoded
        }
        return push
    }
}

extension EventOptions {
    /// A publisher's `priority` (10, 5 or 1) as the push's.
    public static func priority(_ value: Int) throws(TemplateError) -> PushPriority {
        guard let parsed = PushPriority(rawValue: value) else { throw TemplateError(field: "priority", message: "priority is 10, 5 or 1") }
        return parsed
    }
}
