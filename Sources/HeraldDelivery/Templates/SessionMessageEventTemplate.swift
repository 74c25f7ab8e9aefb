import HeraldCore
import HeraldPushCore

/// GhostTalk's `session.message`: a session's message, to the devices watching `session:<id>`
/// when the event names no targets.
struct SessionMessageEventTemplate: EventTemplate {
    var names: [String] { ["session.message"] }

    func render(_ event: TemplateEvent) throws -> TemplateRendering {
        let f = event.reader
        let session = try f.string("session_id", maximum: WatchKey.maximumIdentifierLength)
        let message = SessionMessageTemplate.Message(
            sessionID: session, messageID: try f.string("message_id", maximum: 256), timestamp: try f.unixSeconds("timestamp"),
            encrypted: try f.bool("encrypted", default: true), hasAttachment: try f.bool("has_attachment", default: false))
        let key: WatchKey
        do { key = try WatchKey("session:" + session) } catch { throw Refusal.invalid(event.prefix + "fields.session_id", "\(error)") }
        return TemplateRendering(push: SessionMessageTemplate.render(message), implicitKeys: [key])
    }
}
