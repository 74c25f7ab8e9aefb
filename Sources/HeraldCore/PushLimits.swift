import HeraldPushCore

/// What a push service refuses in a rendered push, checked when an event is published, before
/// anything is committed: each `PushService` gives its own (APNs: Apple's rules; FCM: what it
/// refuses in the data a custom event gives verbatim; none: the service fits what it carries when
/// it sends, as Web Push's provider shrinks a push over its limit).
public protocol PushLimits: Sendable {
    /// - Throws: `TemplateError` naming the field at fault (`fields`, `priority`, …);
    ///   `isTooLarge` tells a push over a size limit apart.
    func check(_ push: RenderedPush) throws(TemplateError)
}

extension [any PushLimits] {
    /// Checks `push` against each service's limits in turn; the first refusal is thrown.
    public func check(_ push: RenderedPush) throws(TemplateError) {
        for limits in self { try limits.check(push) }
    }
}
