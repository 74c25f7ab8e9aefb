import HeraldCore
import HeraldPushCore

/// Claudiator's `agent.event`: a coding agent's stop or notification, titled by the app's texts,
/// to every device of the app when the event names no targets.
struct AgentEventEventTemplate: EventTemplate {
    var names: [String] { ["agent.event"] }

    func render(_ event: TemplateEvent) throws -> TemplateRendering {
        let f = event.reader
        let agentEvent = AgentEventTemplate.Event(
            hookEventName: try f.string("hook_event_name", maximum: 64), notificationType: try f.optionalString("notification_type"),
            toolName: try f.optionalString("tool_name"), deviceName: try f.string("device_name", maximum: 256),
            sessionID: try f.string("session_id", maximum: 256), message: try f.optionalString("message"))
        guard let push = AgentEventTemplate.render(agentEvent, texts: event.app.agentEventTexts) else {
            throw Refusal.invalid(event.prefix + "fields.hook_event_name", "agent.event pushes for Stop and Notification only")
        }
        return TemplateRendering(push: push, reachesAllDevicesUntargeted: true)
    }
}
