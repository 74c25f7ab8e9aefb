import HeraldCore
import HeraldDelivery
import HeraldPushCore

/// A template of the tests' own, `test.greeting`: `fields.name` (1 to 4,096 characters) becomes an
/// alert "Hello, <name>" to the devices watching `session:greetings` when the event names no
/// targets. It plugs in as any next template would: this file and one line in the registry.
struct GreetingTemplate: EventTemplate {
    var names: [String] { ["test.greeting"] }

    var openAPIFieldsSchema: String? {
        #"{"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":4096}},"required":["name"]}"#
    }

    func render(_ event: TemplateEvent) throws -> TemplateRendering {
        let name = try event.reader.string("name", maximum: 4_096)
        let payload = JSONValue.object([.init("aps", .object([.init("alert", .object([.init("title", .string("Hello, " + name))]))]))]).encoded
        return TemplateRendering(
            push: RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: payload),
            implicitKeys: [try! WatchKey("session:greetings")])
    }
}
