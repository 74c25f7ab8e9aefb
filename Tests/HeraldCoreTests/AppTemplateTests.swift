import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldPushCore
import Testing

@Suite("The other apps' templates: exact bytes")
struct AppTemplateTests {
    @Test("conversation.silent: the first 32 hex characters of SHA-256(conversation id), background, priority 5, collapse id the hash")
    func conversationSilent() {
        // echo -n conv-42 | sha256sum → 49933ea253b58d70fdf1ca26f4b1bca8…
        let push = ConversationSilentTemplate.render(conversationID: "conv-42")
        #expect(String(decoding: push.payload, as: UTF8.self) == #"{"aps":{"content-available":1},"c":"49933ea253b58d70fdf1ca26f4b1bca8"}"#)
        // A duplicate collapses on the device: the collapse id is the conversation hash.
        #expect(push.pushType == .background && push.priority == .considerate && push.collapseID == "49933ea253b58d70fdf1ca26f4b1bca8")
    }

    @Test("session.message: the document's payload")
    func sessionMessage() {
        let push = SessionMessageTemplate.render(.init(
            sessionID: "05ABC123", messageID: "msg-123", timestamp: 1_697_192_400, encrypted: true, hasAttachment: false))
        #expect(String(decoding: push.payload, as: UTF8.self) == #"{"aps":{"alert":{"title":"New Message","body":"You have a new message"},"badge":1,"sound":"default","mutable-content":1,"content-available":1},"session_id":"05ABC123","message_id":"msg-123","timestamp":1697192400,"encrypted":true,"has_attachment":false}"#)
        #expect(push.pushType == .alert && push.priority == .immediate)
    }

    @Test("agent.event: the document's table", arguments: [
        (AgentEventTemplate.Event(hookEventName: "Stop", deviceName: "shahads-macbook", sessionID: "abc123"),
         "Claude is waiting", "Session idle on shahads-macbook"),
        (AgentEventTemplate.Event(hookEventName: "Notification", notificationType: "permission_prompt", toolName: "Bash",
                                  deviceName: "shahads-macbook", sessionID: "abc123"),
         "Permission needed", "Bash on shahads-macbook"),
        (AgentEventTemplate.Event(hookEventName: "Notification", notificationType: "idle_prompt", deviceName: "shahads-macbook", sessionID: "abc123"),
         "Session idle", "Idle on shahads-macbook"),
        (AgentEventTemplate.Event(hookEventName: "Notification", notificationType: "auth_success", deviceName: "shahads-macbook",
                                  sessionID: "abc123", message: "Logged in"),
         "Claude notification", "Logged in"),
        (AgentEventTemplate.Event(hookEventName: "Notification", deviceName: "shahads-macbook", sessionID: "abc123"),
         "Claude notification", "Event on shahads-macbook"),
    ])
    func agentEvent(event: AgentEventTemplate.Event, title: String, body: String) throws {
        let push = try #require(AgentEventTemplate.render(event))
        #expect(String(decoding: push.payload, as: UTF8.self) == #"{"aps":{"alert":{"title":"\#(title)","body":"\#(body)"},"sound":"default"},"session_id":"abc123","device_name":"shahads-macbook","event_type":"\#(event.hookEventName)"}"#)
    }

    @Test("agent.event: other hook events do not push; an app's own texts replace the table's")
    func agentEventOverrides() throws {
        #expect(AgentEventTemplate.render(.init(hookEventName: "PreToolUse", deviceName: "d", sessionID: "s")) == nil)
        var texts = AgentEventTemplate.Texts()
        texts.stop = .init(title: "Fertig", body: "{device_name} wartet")
        let push = try #require(AgentEventTemplate.render(.init(hookEventName: "Stop", deviceName: "mac", sessionID: "s"), texts: texts))
        #expect(String(decoding: push.payload, as: UTF8.self).hasPrefix(#"{"aps":{"alert":{"title":"Fertig","body":"mac wartet"}"#))
    }
}
