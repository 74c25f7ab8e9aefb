import HeraldPushCore

/// GhostTalk's `session.message` template, byte for byte what GhostTalk's notifier sent:
/// a generic alert that says nothing of the message, and the ids the app fetches it by.
public enum SessionMessageTemplate {
    /// The message a `session.message` push announces.
    public struct Message: Hashable, Sendable {
        public var sessionID: String
        public var messageID: String
        /// Unix seconds.
        public var timestamp: Int64
        public var encrypted: Bool
        public var hasAttachment: Bool

        public init(sessionID: String, messageID: String, timestamp: Int64, encrypted: Bool, hasAttachment: Bool) {
            self.sessionID = sessionID
            self.messageID = messageID
            self.timestamp = timestamp
            self.encrypted = encrypted
            self.hasAttachment = hasAttachment
        }
    }

    /// The document's payload, byte for byte: alert "New Message" / "You have a new message",
    /// badge 1, sound default, mutable-content and content-available, then the message's fields.
    public static func render(_ message: Message) -> RenderedPush {
        let payload = JSONValue.object([
            .init("aps", .object([
                .init("alert", .object([.init("title", .string("New Message")), .init("body", .string("You have a new message"))])),
                .init("badge", .int(1)),
                .init("sound", .string("default")),
                .init("mutable-content", .int(1)),
                .init("content-available", .int(1)),
            ])),
            .init("session_id", .string(message.sessionID)),
            .init("message_id", .string(message.messageID)),
            .init("timestamp", .int(message.timestamp)),
            .init("encrypted", .bool(message.encrypted)),
            .init("has_attachment", .bool(message.hasAttachment)),
        ]).encoded
        return RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: payload)
    }
}
