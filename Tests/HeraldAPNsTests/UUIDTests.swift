import Foundation
import HeraldAPNsCore
import HeraldPushCore
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

    @Test("Ids drawn at once from eight tasks, 16,000 of them (the system's bytes are drawn 256 ids at a time), are all distinct")
    func concurrentDrawsAreDistinct() async {
        let ids = await withTaskGroup(of: [UUID].self) { group in
            for task in 0..<8 {
                group.addTask {
                    (0..<2_000).map { i in (task + i) % 2 == 0 ? UUID.random() : UUID.timeOrdered(at: Date(timeIntervalSince1970: 1_800_000_000)) }
                }
            }
            return await group.reduce(into: [UUID]()) { $0 += $1 }
        }
        #expect(ids.count == 16_000)
        #expect(Set(ids).count == 16_000)
        // Both halves of every id are random: no two ids share their last 8 bytes either.
        #expect(Set(ids.map { withUnsafeBytes(of: $0.uuid) { Array($0[8..<16]) } }).count == 16_000)
    }

    @Test("UUID.timeOrdered(at:) is version 7: the milliseconds first, so later ids sort after earlier ones; distinct within one millisecond")
    func timeOrderedVersion7() {
        let start = Date(timeIntervalSince1970: 1_800_000_000.123)
        var previous = ""
        var seen = Set<String>()
        for step in 0..<1_000 {
            // Two ids per millisecond: the same millisecond, then the next.
            let id = UUID.timeOrdered(at: start.addingTimeInterval(Double(step / 2) / 1000)).lowercasedString
            let digits = Array(id)
            #expect(digits[14] == "7", "version 7: \(id)")
            #expect("89ab".contains(digits[19]), "RFC 9562 variant: \(id)")
            let milliseconds = UInt64(String(digits[0..<8] + digits[9..<13]), radix: 16)
            #expect(milliseconds == 1_800_000_000_123 + UInt64(step / 2), "\(id)")
            if step % 2 == 0 { #expect(id > previous, "\(id) sorts after \(previous)") }
            previous = id
            seen.insert(id)
        }
        #expect(seen.count == 1_000)
        // Out-of-range dates are pinned, not trapped on.
        #expect(UUID.timeOrdered(at: Date(timeIntervalSince1970: -5)).lowercasedString.hasPrefix("00000000-0000-7"))
        #expect(UUID.timeOrdered(at: Date(timeIntervalSince1970: 1e15)).lowercasedString.hasPrefix("ffffffff-ffff-7"))
    }

    @Test("lowercasedString of fixed bytes")
    func fixedBytes() {
        let id = UUID(bytes: Array(0..<16))
        #expect(id.lowercasedString == "00010203-0405-0607-0809-0a0b0c0d0e0f")
        #expect(UUID(bytes: [UInt8](repeating: 0xAB, count: 16)).lowercasedString == "abababab-abab-abab-abab-abababababab")
    }
}
