import HeraldCore
import HeraldPushCore

/// `custom`: the caller's `aps` dictionary and top-level keys (`CustomTemplate`), with its own
/// `push_type`, and the FCM data Android devices get verbatim.
struct CustomEventTemplate: EventTemplate {
    var names: [String] { ["custom"] }

    func render(_ event: TemplateEvent) throws -> TemplateRendering {
        let prefix = event.prefix
        // A null field is an absent one, as everywhere in the API.
        let map = Dictionary(event.fields.objectFields!.filter { $0.value != .null }.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
        guard let aps = map["aps"] else { throw Refusal.missing(prefix + "fields.aps") }
        // The document's form (malformed); what Apple and Google make of the contents is unprocessable below.
        for key in ["aps", "data", "fcm"] where map[key].map({ $0.objectFields == nil }) == true {
            throw Refusal.invalid(prefix + "fields." + key, "\(key) is a JSON object")
        }
        let pushType: PushType?
        do throws(TemplateError) {
            pushType = try map["push_type"].map(CustomTemplate.pushType)
        } catch {
            throw Refusal.invalid(prefix + error.field, error.message)
        }
        let push: RenderedPush
        do throws(TemplateError) {
            push = try CustomTemplate.render(
                aps: aps, data: map["data"], pushType: pushType, priority: event.priority, collapseID: event.collapseID, fcm: map["fcm"],
                checkedBy: event.pushLimits)
        } catch {
            throw Refusal(refusedPush: error, prefix: prefix)
        }
        return TemplateRendering(push: push, appliedOptions: true, coalescible: true)
    }
}
