import Foundation
import Testing

@testable import HeraldKit

/// A hostile or broken server's `Retry-After` cannot stop the host app: every value is read
/// without a trapping conversion, and every wait stays within 0…30 s.
@Suite("HeraldClient: Retry-After from an untrusted server")
struct RetryAfterTests {
    @Test("what a server may send", arguments: [
        ("5", 5.0), ("0", 0.0), (" 2 ", 2.0), ("-1", nil), ("nan", nil), ("NaN", nil), ("inf", nil), ("-inf", nil),
        ("1e300", 1e300), ("9223372036854775808", 9_223_372_036_854_775_808.0), ("Wed, 21 Oct 2015 07:28:00 GMT", nil), ("", nil),
    ] as [(String, Double?)])
    func parsed(header: String, seconds: Double?) {
        #expect(HeraldClient.retryAfter(header) == seconds)
    }

    @Test("every delay the client waits is within 0…30 s and converts to nanoseconds", arguments: [
        -1.0, 0, 0.5, 30, 31, 1e300, -1e300, .infinity, -.infinity, .nan,
    ])
    func clamped(seconds: Double) {
        let delay = HeraldClient.clampedDelay(seconds)
        #expect(delay >= 0 && delay <= 30)
        #expect(UInt64(exactly: (delay * 1_000_000_000).rounded()) != nil)
    }
}
