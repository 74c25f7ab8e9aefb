import Crypto
import HeraldPushCore
import KasiaProtocol

/// SafeWhisper's `conversation.silent` template: a background push that says only
/// which conversation changed, as the first 32 hex characters of SHA-256(conversation id).
/// No content, no sender, nothing else.
public enum ConversationSilentTemplate {
    /// Renders `{"aps":{"content-available":1},"c":"<hash>"}`, background, priority 5, collapse id `<hash>`.
    public static func render(conversationID: String) -> RenderedPush {
        let conversation = hash(conversationID)
        let payload = JSONValue.object([
            .init("aps", .object([.init("content-available", .int(1))])),
            .init("c", .string(conversation)),
        ]).encoded
        // Pushes about one conversation replace each other on the device.
        return RenderedPush(pushType: .background, priority: .considerate, collapseID: conversation, payload: payload)
    }

    /// The first 32 lowercase hex characters of SHA-256 of the id's UTF-8 bytes.
    public static func hash(_ conversationID: String) -> String {
        Hex.encode(SHA256.hash(data: Array(conversationID.utf8)).prefix(16))
    }
}
