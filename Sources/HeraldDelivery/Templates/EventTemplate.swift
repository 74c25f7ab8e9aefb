public import HeraldCore
public import HeraldPushCore

/// One template of `/v1/events`, as push services are one `PushService` each: the names it
/// answers to, how it reads an event's `fields`, and the push it renders. Herald's are `custom`,
/// Kasia's three, GhostTalk's `session.message`, Claudiator's `agent.event` and SafeWhisper's
/// `conversation.silent`; another is a conformance in a file of its own and one line in an
/// `EventTemplateRegistry`.
public protocol EventTemplate: Sendable {
    /// The `template` names it renders (Kasia's: three).
    var names: [String] { get }

    /// Reads the event's `fields` and renders its push.
    /// - Throws: `Refusal` naming the field at fault (under `event.prefix`).
    func render(_ event: TemplateEvent) throws -> TemplateRendering

    /// The JSON Schema of its events' `fields`, for the served OpenAPI document's `Event` (nil:
    /// Herald's own, whose branches are in the document's file).
    var openAPIFieldsSchema: String? { get }
}

extension EventTemplate {
    public var openAPIFieldsSchema: String? { nil }
}

/// An event as its template sees it: the name it was published under, its `fields`, its app, and
/// the options it gave.
public struct TemplateEvent: Sendable {
    /// The template name (`kasia.payment`).
    public var name: String
    /// The event's `fields`, a JSON object.
    public var fields: JSONValue
    /// Where the event is in the request (`events[3].`), for the fields' names in a refusal.
    public var prefix: String
    public var app: AppSettings
    public var priority: PushPriority?
    public var collapseID: String?
    /// The push services' publish-time limits, for a template that checks while rendering (`custom`).
    public var pushLimits: [any PushLimits]

    /// Reads `fields`, naming a field at fault as the API does (`events[3].fields.session_id`).
    public var reader: FieldReader { FieldReader(fields: fields, prefix: prefix + "fields.") }
}

/// What a template made of an event: its push, and what the event implies when it names no targets.
public struct TemplateRendering: Sendable {
    public var push: RenderedPush
    /// The watch keys an untargeted event goes to (`session.message`: its session).
    public var implicitKeys: [WatchKey]
    /// Whether an untargeted event goes to every device of the app (`agent.event`).
    public var reachesAllDevicesUntargeted: Bool
    /// The Kasia event, routed by its recipient when untargeted.
    public var kasia: KasiaEvent?
    /// Whether the template applied the event's priority and collapse id and checked the push
    /// services' limits itself (`custom`); otherwise the publisher does.
    public var appliedOptions: Bool
    /// Whether the template rendered the app's presentation defaults itself (Kasia's, through
    /// `AppSettings.render`); otherwise the publisher applies them under the event's fields.
    public var appliedPresentationDefaults: Bool
    /// Whether its events may coalesce (`coalesce_seconds`): a newer one replacing an older one
    /// still waiting. Kasia's are per message and keep every push; `custom` opts in.
    public var coalescible: Bool

    public init(
        push: RenderedPush, implicitKeys: [WatchKey] = [], reachesAllDevicesUntargeted: Bool = false, kasia: KasiaEvent? = nil,
        appliedOptions: Bool = false, appliedPresentationDefaults: Bool = false, coalescible: Bool = false
    ) {
        self.coalescible = coalescible
        self.push = push
        self.implicitKeys = implicitKeys
        self.reachesAllDevicesUntargeted = reachesAllDevicesUntargeted
        self.kasia = kasia
        self.appliedOptions = appliedOptions
        self.appliedPresentationDefaults = appliedPresentationDefaults
    }
}

/// The templates an instance renders, in order.
public struct EventTemplateRegistry: Sendable {
    public var templates: [any EventTemplate]

    public init(_ templates: [any EventTemplate]) { self.templates = templates }

    /// Herald's templates.
    public static let builtIn = EventTemplateRegistry([
        CustomEventTemplate(), KasiaEventTemplate(), SessionMessageEventTemplate(), AgentEventEventTemplate(), ConversationSilentEventTemplate(),
        DismissEventTemplate(),
    ])

    /// Every name, in order, as a refusal lists them.
    public var names: [String] { templates.flatMap(\.names) }

    /// The added templates' `fields` schemas by name, for the served OpenAPI document.
    public var openAPIFieldsSchemas: [String: String] {
        var schemas: [String: String] = [:]
        for template in templates {
            guard let schema = template.openAPIFieldsSchema else { continue }
            for name in template.names { schemas[name] = schema }
        }
        return schemas
    }

    /// The template that renders `name`, if any.
    public func template(named name: String) -> (any EventTemplate)? {
        templates.first { $0.names.contains(name) }
    }
}

extension Refusal {
    /// What a push service refuses in a rendered push: 413 `push_too_large` over a size limit,
    /// 422 otherwise, naming the field under `prefix`.
    public init(refusedPush error: TemplateError, prefix: String) {
        if error.isTooLarge {
            self.init(.tooLarge, code: "push_too_large", message: error.message, field: prefix + error.field)
        } else {
            self = .unprocessable(prefix + error.field, error.message)
        }
    }
}
