import HeraldPushCore
import Testing

@Suite("Device attributes")
struct DeviceAttributesTests {
    @Test("a value read from the stored form's bytes, and its presence, are what the JSON parse gives, whatever the values hold")
    func readWithoutAParse() {
        let tricky = [
            "plain", "", #"a "quoted" word"#, #"back\slash"#, #"","environment":"forged"#, "Grüße ✓", "line\nbreak", "p256dh\"", "/slash/",
        ]
        let keys = ["environment", "push_p256dh", "push_auth", "auth", "token_kind", "web_keys", "push_a", "push_authority"]
        for (n, value) in tricky.enumerated() {
            var values = ["environment": n.isMultiple(of: 2) ? "production" : value, "push_auth": value, "push_p256dh": "BP" + value]
            if n.isMultiple(of: 3) { values["web_keys"] = value + value }
            // Keys that begin alike, before and after the one read.
            if n.isMultiple(of: 2) { values["push_a"] = "push_auth"; values["push_authority"] = #""push_auth":"x""# }
            let attributes = DeviceAttributes(values)
            for key in keys + ["missing", #"with"quote"#] {
                #expect(attributes[key] == attributes.values[key], "\(key) of \(attributes.storedForm)")
                #expect(attributes.contains(key) == (attributes.values[key] != nil), "\(key) of \(attributes.storedForm)")
            }
            #expect(attributes["push_auth"] == value && attributes["auth"] == nil)
        }
        // A text that is not an object of strings reads as no values, by either road.
        for text in [#"{"environment":"production""#, "[]", "", #"{"environment":5}"#] {
            #expect(DeviceAttributes(storedForm: text)["environment"] == nil, "\(text)")
            #expect(!DeviceAttributes(storedForm: text).contains("environment"), "\(text)")
        }
    }
}
