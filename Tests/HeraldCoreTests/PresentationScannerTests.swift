import Foundation
import HeraldCore
import HeraldPushCore
import Testing

/// The sealed alert's presentation read from a document's bytes (`PushPresentation.apsMembers(of:)`)
/// is what reading the whole document gives (`PushPresentation(aps:)`), on documents Herald renders
/// and on ones written to trip a scanner: escapes, nesting, spacing, repeats, wrong types.
@Suite struct PresentationScannerTests {
    /// What the members say, as a dictionary (nil when they are not JSON members).
    static func members(_ bytes: [UInt8]) -> NSDictionary? {
        let text = "{" + String(decoding: bytes.dropFirst(), as: UTF8.self) + "}"
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? NSDictionary
    }

    /// The reference: the whole document parsed, its `aps` read by `PushPresentation(aps:)`.
    static func parsed(_ document: String) -> [UInt8] {
        let aps = (try? JSONValue(parsing: Array(document.utf8)))?[path: ["aps"]]?.objectFields ?? []
        var out: [UInt8] = []
        for field in PushPresentation(aps: aps).applied(to: []) {
            out += Array(",".utf8) + JSONValue.string(field.key).encoded + Array(":".utf8) + field.value.encoded
        }
        return out
    }

    static let documents: [String] = [
        #"{"aps":{"alert":{"title":"T","body":"B"},"mutable-content":1,"content-available":1,"sound":"default","category":"kasia.message","thread-id":"kaspa:q"},"kasia":{"payload":"ab"}}"#,
        #"{"aps":{"sound":"chime.caf","category":"c","interruption-level":"time-sensitive","relevance-score":0.5,"badge":99999}}"#,
        #"{"k":{"aps":{"sound":"not this one"}},"aps":{"badge":3},"z":[1,{"aps":{"badge":4}}]}"#,
        #" { "aps" : { "sound" : "a \" b \\ c \u00e9" , "category" : "x" } } "#,
        #"{"aps":{"alert":"has \"sound\":\"fake\" inside","sound":"real"}}"#,
        #"{"aps":{"sound":{"critical":1,"name":"alarm.caf","volume":1},"category":7,"badge":-1,"relevance-score":"high"}}"#,
        #"{"aps":{"interruption-level":"loud","badge":100000,"relevance-score":1e-3}}"#,
        #"{"aps":{"badge":0,"badge":5,"sound":"first","sound":"second"}}"#,
        #"{"aps":{"relevance-score":-0.0,"badge":007}}"#,
        #"{"aps":{}}"#, #"{"aps":"not an object"}"#, #"{"other":1}"#, #"[1,2]"#, #"not json"#, "",
        #"{"aps":{"sound":"cut off"#, #"{"aps":{"sound":"x","category":"y"}"#,
        #"{"aps":{"nested":{"a":[{"b":"}"}]},"sound":"after nesting"},"x":"{"}"#,
    ]

    @Test("each document's members are the whole parse's", arguments: documents)
    func agrees(document: String) {
        let scanned = PushPresentation.apsMembers(of: Array(document.utf8))
        let reference = Self.parsed(document)
        // Herald seals only documents it wrote; of one that is not JSON at all, the scan still
        // writes nothing that is not JSON.
        guard (try? JSONSerialization.jsonObject(with: Data(document.utf8), options: [.fragmentsAllowed])) != nil else {
            #expect(scanned.isEmpty || Self.members(scanned) != nil, "\(String(decoding: scanned, as: UTF8.self))")
            return
        }
        if reference.isEmpty {
            #expect(scanned.isEmpty, "\(String(decoding: scanned, as: UTF8.self))")
        } else {
            #expect(Self.members(scanned) == Self.members(reference), "\(String(decoding: scanned, as: UTF8.self)) vs \(String(decoding: reference, as: UTF8.self))")
        }
        // And in the order a sealed alert writes them.
        let keys = (Self.members(scanned)?.allKeys as? [String]) ?? []
        let order = ["sound", "category", "interruption-level", "relevance-score", "badge"]
        let written = order.filter { String(decoding: scanned, as: UTF8.self).contains("\"\($0)\":") }
        #expect(Set(written) == Set(keys))
    }
}
