import Foundation
import NIOCore
import NIOHPACK
import Testing

@testable import HeraldAPNs
import HeraldAPNsCore
import HeraldHTTP2

/// APNs (or whatever answers in its place) is a peer: its numbers are believed only within reason.
@Suite("APNs answers with hostile numbers")
struct HostileAnswerTests {
    static func answer(status: Int, retryAfter: String? = nil, body: String) -> APNsResult {
        var headers = HPACKHeaders()
        if let retryAfter { headers.add(name: "retry-after", value: retryAfter) }
        return APNsClient.result(
            from: HTTP2Response(status: status, headers: headers, body: ByteBuffer(string: body)), apnsID: UUID(), sentAs: "")
    }

    @Test("Retry-After is clamped to 0…3600 s; one that is no integer is ignored", arguments: [
        ("5", 5), ("-1", 0), ("9223372036854775807", 3_600), ("99999999999999999999", nil), ("nan", nil), ("1e300", nil),
    ] as [(String, Int?)])
    func retryAfter(header: String, seconds: Int?) {
        guard case .rejected(_, _, _, let retryAfter) = Self.answer(status: 429, retryAfter: header, body: #"{"reason":"TooManyRequests"}"#) else {
            Issue.record("not a rejection")
            return
        }
        #expect(retryAfter == seconds.map { .seconds($0) })
    }

    @Test("a 410 timestamp outside 1970…2286 is ignored (the device is then only disabled, never deleted by it)", arguments: [
        ("1700000000000", true), ("-1", false), ("1e300", false), ("1e13", true), ("1.1e13", false),
    ])
    func timestamp(value: String, believed: Bool) {
        guard case .rejected(_, let reason, let timestamp, _) = Self.answer(status: 410, body: #"{"reason":"Unregistered","timestamp":\#(value)}"#) else {
            Issue.record("not a rejection")
            return
        }
        #expect(reason == .unregistered)
        #expect((timestamp != nil) == believed)
    }

    @Test("each field of the error body is read on its own: a timestamp that is no number leaves the reason; a body that is not JSON, the HTTP status")
    func looseBody() {
        guard case .rejected(_, let reason, let timestamp, _) = Self.answer(status: 410, body: #"{"reason":"Unregistered","timestamp":"soon"}"#),
            case .rejected(_, let other, _, _) = Self.answer(status: 502, body: "<html>bad gateway</html>"),
            case .rejected(_, let big, let never, _) = Self.answer(status: 410, body: #"{"timestamp":18446744073709551615,"reason":"ExpiredToken"}"#)
        else {
            Issue.record("not a rejection")
            return
        }
        #expect(reason == .unregistered && timestamp == nil)
        #expect(other == .other("HTTP 502"))
        #expect(big == APNsReason("ExpiredToken") && never == nil)
    }
}
