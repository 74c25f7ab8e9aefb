import Foundation
import HeraldCore
import Testing

@Suite("RFC 3339 date-times")
struct RFC3339Tests {
    @Test("reads what the RFC allows, offsets and fractions included, to the same second Foundation gives", arguments: [
        "2026-11-24T20:17:28Z", "2026-11-24t20:17:28z", "2026-11-24T20:17:28.123456Z", "2026-11-24T21:17:28+01:00",
        "2026-11-24T04:25:28-15:52", "2000-02-29T00:00:00Z", "1970-01-01T00:00:00Z",
    ])
    func reads(_ text: String) throws {
        let expected = Int64(try Date(text.uppercased(), strategy: .iso8601.year().month().day().time(includingFractionalSeconds: text.contains(".")).timeZone(separator: .colon)).timeIntervalSince1970.rounded(.down))
        #expect(RFC3339.unixSeconds(text) == expected)
    }

    @Test("years before 1000 and offsets up to ±23:59, which Foundation's ISO 8601 style refuses")
    func wideRange() {
        #expect(RFC3339.unixSeconds("0001-01-01T00:00:00Z") == -62_135_596_800)
        #expect(RFC3339.unixSeconds("1970-01-01T23:52:00+23:52") == 0)
    }

    @Test("refuses what is not one", arguments: [
        "", "2026-11-24", "2026-11-24T20:17:28", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-11-24T24:00:00Z",
        "2026-11-24T20:17:28+01", "2026-11-24T20:17:28.Z", "2026-11-24T20:17:28Zx", "2026-11-24 20:17:28Z", "２026-11-24T20:17:28Z",
    ])
    func refuses(_ text: String) {
        #expect(RFC3339.unixSeconds(text) == nil)
    }
}
