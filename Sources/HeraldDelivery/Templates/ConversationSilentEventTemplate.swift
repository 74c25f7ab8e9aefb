import HeraldCore
import HeraldPushCore

/// SafeWhisper's `conversation.silent`: a background push naming a conversation by its hash.
struct ConversationSilentEventTemplate: EventTemplate {
    var names: [String] { ["conversation.silent"] }

    func render(_ event: TemplateEvent) throws -> TemplateRendering {
        let conversation = try event.reader.string("conversation_id", maximum: 1_024)
        return TemplateRendering(push: ConversationSilentTemplate.render(conversationID: conversation))
    }
}
