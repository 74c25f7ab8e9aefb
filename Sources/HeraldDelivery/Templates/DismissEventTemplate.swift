import HeraldCore
import HeraldPushCore

/// `dismiss`: a backend that knows a conversation was read (SafeWhisper, GhostTalk) tells the
/// devices it targets to take that conversation's notifications away, up to a position
/// (HeraldKit's `DismissalPlanner`). A background push that shows nothing, priority 5; pushes for
/// one conversation replace each other at the push service, under a collapse id that is a keyed
/// hash of the conversation (the app's signing key), never the conversation itself.
struct DismissEventTemplate: EventTemplate {
    var names: [String] { ["dismiss"] }

    func render(_ event: TemplateEvent) throws -> TemplateRendering {
        let reader = event.reader
        let conversation = try reader.string("conversation", maximum: 256)
        let upTo = try reader.string("up_to", maximum: 128)
        return TemplateRendering(push: Self.push(conversation: conversation, upTo: upTo, signingKey: event.app.sealing?.signingKey))
    }

    /// The `herald.dismiss` push `{"conversation", "up_to"}`, for this template and for read markers.
    static func push(conversation: String, upTo: String, signingKey: PushSigningKey?) -> RenderedPush {
        let payload = JSONValue.object([
            .init("aps", .object([.init("content-available", .int(1))])),
            .init("conversation", .string(conversation)), .init("up_to", .string(upTo)),
        ]).encoded
        let collapse = signingKey?.opaqueCollapseID("dismiss:" + conversation) ?? ConversationSilentTemplate.hash("dismiss:" + conversation)
        return RenderedPush(pushType: .background, priority: .considerate, collapseID: collapse, payload: payload)
    }
}
