import Foundation
import HeraldAPNsCore
import Testing

@Suite("Random UUIDs and their lowercase form")
struct UUIDTests {
    @Test("UUID.random() is version 4 with the RFC 4122 variant, distinct each time, and its lowercase form is Foundation's lowercased")
    func randomVersion4() {
        var seen = Set<UUID>()
        for _ in 0..<1_000 {
            let id = UUID.random()
            let text = id.lowercasedString
            #expect(text == id.uuidString.lowercased())
            #expect(Array(text)[14] == "4", "version 4: \(text)")
            #expect("89ab".contains(Array(text)[19]), "RFC 4122 variant: \(text)")
            #expect(UUID(uuidString: text) == id)
            seen.insert(id)
        }
        #expect(seen.count == 1_000)
    }

    @Test("lowercasedString of fixed bytes")
    func fixedBytes() {
        let id = UUID(bytes: Array(0..<16))
        #expect(id.lowercasedString == "00010203-0405-0607-0809-0a0b0c0d0e0f")
        #expect(UUID(bytes: [UInt8](repeating: 0xAB, count: 16)).lowercasedString == "abababab-abab-abab-abab-abababababab")
    }
}
