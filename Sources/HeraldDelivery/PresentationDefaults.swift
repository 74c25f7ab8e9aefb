public import HeraldCore

/// An app's presentation defaults: its own, and each template's over them; an event's fields go over both.
public struct PresentationDefaults: Sendable, Hashable {
    public var app = PushPresentation()
    public var templates: [String: PushPresentation] = [:]

    public init(app: PushPresentation = PushPresentation(), templates: [String: PushPresentation] = [:]) {
        self.app = app
        self.templates = templates
    }

    /// What `template`'s alerts get when the event says nothing.
    public func `for`(_ template: String) -> PushPresentation {
        templates[template].map { app.overridden(by: $0) } ?? app
    }
}
