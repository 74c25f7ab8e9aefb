import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldPushCore
import HeraldTestSupport
import Testing

@Suite("ES256 provider tokens")
struct ProviderTokenTests {
    let key = APNsSigningKey(privateKey: P256.Signing.PrivateKey(), keyID: "ABC123DEF4", teamID: "TEAM123456")

    @Test("the JWT is {alg,kid}.{iss,iat} with an integer iat and a valid ES256 signature")
    func shape() throws {
        let issued = Date(timeIntervalSince1970: 1_706_900_000.75)
        let jwt = key.makeToken(issuedAt: issued)
        let parts = jwt.split(separator: ".")
        #expect(parts.count == 3)
        let header = try #require(Base64URL.decode(parts[0]))
        let claims = try #require(Base64URL.decode(parts[1]))
        #expect(String(decoding: header, as: UTF8.self) == #"{"alg":"ES256","kid":"ABC123DEF4"}"#)
        #expect(String(decoding: claims, as: UTF8.self) == #"{"iss":"TEAM123456","iat":1706900000}"#)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64URL.decode(parts[2])))
        #expect(key.publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)))
        #expect(!jwt.contains("="))
    }

    @Test("one token until 50 minutes, then exactly one more")
    func refreshAtFiftyMinutes() async {
        let clock = ManualClock(now: Date())
        let source = APNsProviderTokenSource(key: key, now: clock.now)
        let first = await source.currentToken()
        for _ in 0..<1_000 { #expect(await source.currentToken() == first) }
        clock.advance(by: 49 * 60)
        #expect(await source.currentToken() == first)
        clock.advance(by: 2 * 60)
        let second = await source.currentToken()
        #expect(second != first)
        #expect(await source.currentToken() == second)
        #expect(source.mintedCount == 2)
    }

    @Test("a refused token is replaced only once the 20-minute floor has passed")
    func twentyMinuteFloor() async {
        let clock = ManualClock(now: Date())
        let source = APNsProviderTokenSource(key: key, now: clock.now)
        let first = await source.currentToken()
        clock.advance(by: 5 * 60)
        #expect(source.refreshRequested(after: first) == false)
        #expect(await source.currentToken() == first)
        clock.advance(by: 16 * 60)
        // The earlier request still stands: now past 20 minutes, the next call mints.
        let second = await source.currentToken()
        #expect(second != first)
        #expect(source.refreshRequested(after: second) == false)
        #expect(await source.currentToken() == second)
        #expect(source.mintedCount == 2)
    }

    @Test("a .p8 file loads")
    func loadsP8() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey_\(UUID()).p8").path
        let privateKey = P256.Signing.PrivateKey()
        try privateKey.pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let loaded = try APNsSigningKey(contentsOfFile: path, keyID: "K", teamID: "T")
        #expect(loaded.publicKey.rawRepresentation == privateKey.publicKey.rawRepresentation)
        #expect(throws: (any Error).self) { try APNsSigningKey(pem: "nope", keyID: "K", teamID: "T") }
    }
}

@Suite("Classification into the actions docs/apns.md lists")
struct ClassificationTests {
    static let when = Date(timeIntervalSince1970: 1_700_000_000)

    @Test("each row of the table", arguments: [
        (APNsResult.accepted(apnsID: UUID()), APNsAction.done),
        (.rejected(status: 400, reason: .badDeviceToken, timestamp: nil, retryAfter: nil), .tokenDead(since: nil)),
        (.rejected(status: 400, reason: .deviceTokenNotForTopic, timestamp: nil, retryAfter: nil), .tokenDead(since: nil)),
        (.rejected(status: 410, reason: .unregistered, timestamp: when, retryAfter: nil), .tokenDead(since: when)),
        (.rejected(status: 410, reason: .expiredToken, timestamp: when, retryAfter: nil), .tokenDead(since: when)),
        (.rejected(status: 403, reason: .expiredProviderToken, timestamp: nil, retryAfter: nil), .refreshCredentials),
        (.rejected(status: 403, reason: .invalidProviderToken, timestamp: nil, retryAfter: nil), .refreshCredentials),
        (.rejected(status: 413, reason: .payloadTooLarge, timestamp: nil, retryAfter: nil), .shrinkPayload),
        (.rejected(status: 429, reason: .tooManyRequests, timestamp: nil, retryAfter: .seconds(7)), .retry(after: .seconds(7), scope: .token)),
        (.rejected(status: 429, reason: .tooManyProviderTokenUpdates, timestamp: nil, retryAfter: nil), .retry(after: nil, scope: .providerToken)),
        (.rejected(status: 500, reason: .internalServerError, timestamp: nil, retryAfter: nil), .retry(after: nil, scope: .server)),
        (.rejected(status: 503, reason: .serviceUnavailable, timestamp: nil, retryAfter: nil), .retry(after: nil, scope: .server)),
        (.transportFailure(.connectionClosed), .retry(after: nil, scope: .server)),
        (.transportFailure(.notProcessed), .retry(after: nil, scope: .server)),
        (.transportFailure(.deadlineExceeded), .retry(after: nil, scope: .server)),
        (.rejected(status: 400, reason: .badTopic, timestamp: nil, retryAfter: nil), .fail(reason: "BadTopic")),
        (.rejected(status: 403, reason: .unrelatedKeyIdInToken, timestamp: nil, retryAfter: nil), .fail(reason: "UnrelatedKeyIdInToken")),
        (.rejected(status: 405, reason: .methodNotAllowed, timestamp: nil, retryAfter: nil), .fail(reason: "MethodNotAllowed")),
    ])
    func row(result: APNsResult, action: APNsAction) {
        #expect(result.action == action)
    }

    @Test("reason strings round-trip and carry Apple's status")
    func reasons() {
        #expect(APNsReason("Unregistered") == .unregistered)
        #expect(APNsReason.unregistered.rawValue == "Unregistered")
        #expect(APNsReason("SomethingNew") == .other("SomethingNew"))
        #expect(APNsReason.payloadTooLarge.httpStatus == 413)
        #expect(APNsReason.expiredToken.httpStatus == 410)
        #expect(APNsReason.tooManyRequests.httpStatus == 429)
    }
}
