import Foundation
import HeraldPushCore

/// Claudiator's `agent.event` template: a
/// visible alert for a Claude Code hook event, titled by the document's table (an app may
/// override each title and body; `{device_name}`, `{tool_name}` and `{message}` are filled in).
public enum AgentEventTemplate {
    /// One hook event.
    public struct Event: Hashable, Sendable {
        public var hookEventName: String
        public var notificationType: String?
        public var toolName: String?
        public var deviceName: String
        public var sessionID: String
        public var message: String?

        public init(
            hookEventName: String, notificationType: String? = nil, toolName: String? = nil, deviceName: String,
            sessionID: String, message: String? = nil
        ) {
            self.hookEventName = hookEventName
            self.notificationType = notificationType
            self.toolName = toolName
            self.deviceName = deviceName
            self.sessionID = sessionID
            self.message = message
        }
    }

    /// A title and body with `{placeholders}`.
    public struct Text: Hashable, Sendable {
        public var title: String
        public var body: String
        public init(title: String, body: String) {
            self.title = title
            self.body = body
        }
    }

    /// The texts of the four rows of the document's table.
    public struct Texts: Hashable, Sendable {
        public var stop = Text(title: "Claude is waiting", body: "Session idle on {device_name}")
        public var permissionPrompt = Text(title: "Permission needed", body: "{tool_name} on {device_name}")
        public var idlePrompt = Text(title: "Session idle", body: "Idle on {device_name}")
        /// `{message}` when the event has one, else the fallback body.
        public var other = Text(title: "Claude notification", body: "{message}")
        public var otherWithoutMessage = "Event on {device_name}"

        public init() {}
    }

    /// The hook events that push (the document: "Stop" or "Notification").
    public static let pushingEvents: Set<String> = ["Stop", "Notification"]

    /// Renders the alert; nil for a hook event that does not push.
    public static func render(_ event: Event, texts: Texts = Texts()) -> RenderedPush? {
        let text: Text
        switch (event.hookEventName, event.notificationType) {
        case ("Stop", _): text = texts.stop
        case ("Notification", "permission_prompt"): text = texts.permissionPrompt
        case ("Notification", "idle_prompt"): text = texts.idlePrompt
        case ("Notification", _):
            text = event.message.map { _ in texts.other } ?? Text(title: texts.other.title, body: texts.otherWithoutMessage)
        default: return nil
        }
        func fill(_ template: String) -> String {
            template.replacingOccurrences(of: "{device_name}", with: event.deviceName)
                .replacingOccurrences(of: "{tool_name}", with: event.toolName ?? "A tool")
                .replacingOccurrences(of: "{message}", with: event.message ?? "")
        }
        let payload = JSONValue.object([
            .init("aps", .object([
                .init("alert", .object([.init("title", .string(fill(text.title))), .init("body", .string(fill(text.body)))])),
                .init("sound", .string("default")),
            ])),
            .init("session_id", .string(event.sessionID)),
            .init("device_name", .string(event.deviceName)),
            .init("event_type", .string(event.hookEventName)),
        ]).encoded
        return RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: payload)
    }
}
