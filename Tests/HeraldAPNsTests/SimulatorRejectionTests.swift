import Crypto
import Foundation
import HeraldAPNs
import HeraldAPNsCore
import HeraldAPNsSimulator
import HeraldHTTP2
import HeraldPushCore
import NIOCore
import NIOHPACK
import Testing

/// Forges provider tokens for the rejection table.
struct TokenKit: Sendable {
    let fixtureKey: APNsSigningKey
    let otherKey: APNsSigningKey
    let privateKey: P256.Signing.PrivateKey

    func valid(ageSeconds: TimeInterval = 0) -> String {
        fixtureKey.makeToken(issuedAt: Date().addingTimeInterval(-ageSeconds))
    }

    func forged(header: String, claims: String, signWith key: P256.Signing.PrivateKey? = nil) -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try! (key ?? privateKey).signature(for: Array(input.utf8))
        return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }
}

struct RejectionRow: Sendable, CustomTestStringConvertible {
    var name: String
    var status: Int
    var reason: String
    var mutate: @Sendable (inout HTTP2Request, TokenKit) -> Void
    var testDescription: String { "\(name) → \(status) \(reason)" }
}

let validToken = String(repeating: "ab", count: 32)
func iatNow() -> Int { Int(Date().timeIntervalSince1970) }

let rejectionRows: [RejectionRow] = [
    .init(name: "GET", status: 405, reason: "MethodNotAllowed") { r, _ in r.method = "GET"; r.body = ByteBuffer() },
    .init(name: "wrong path", status: 404, reason: "BadPath") { r, _ in r.path = "/3/notdevice/" + validToken },
    .init(name: "no token in path", status: 400, reason: "MissingDeviceToken") { r, _ in r.path = "/3/device/" },
    .init(name: "no authorization", status: 403, reason: "MissingProviderToken") { r, _ in r.headers.remove(name: "authorization") },
    .init(name: "not a bearer", status: 403, reason: "InvalidProviderToken") { r, _ in
        r.headers.replaceOrAdd(name: "authorization", value: "basic dXNlcjpwYXNz")
    },
    .init(name: "garbage JWT", status: 403, reason: "InvalidProviderToken") { r, _ in
        r.headers.replaceOrAdd(name: "authorization", value: "bearer a.b.c")
    },
    .init(name: "unknown key id", status: 403, reason: "InvalidProviderToken") { r, k in
        let jwt = k.forged(header: #"{"alg":"ES256","kid":"UNKNOWN000"}"#, claims: #"{"iss":"TEAM123456","iat":\#(iatNow())}"#)
        r.headers.replaceOrAdd(name: "authorization", value: "bearer " + jwt)
    },
    .init(name: "wrong team", status: 403, reason: "InvalidProviderToken") { r, k in
        let jwt = k.forged(header: #"{"alg":"ES256","kid":"KEY1234567"}"#, claims: #"{"iss":"OTHERTEAM1","iat":\#(iatNow())}"#)
        r.headers.replaceOrAdd(name: "authorization", value: "bearer " + jwt)
    },
    .init(name: "signed by another key", status: 403, reason: "InvalidProviderToken") { r, k in
        let jwt = k.forged(
            header: #"{"alg":"ES256","kid":"KEY1234567"}"#, claims: #"{"iss":"TEAM123456","iat":\#(iatNow())}"#,
            signWith: P256.Signing.PrivateKey())
        r.headers.replaceOrAdd(name: "authorization", value: "bearer " + jwt)
    },
    .init(name: "HS256", status: 403, reason: "InvalidProviderToken") { r, k in
        let jwt = k.forged(header: #"{"alg":"HS256","kid":"KEY1234567"}"#, claims: #"{"iss":"TEAM123456","iat":\#(iatNow())}"#)
        r.headers.replaceOrAdd(name: "authorization", value: "bearer " + jwt)
    },
    .init(name: "fractional iat", status: 403, reason: "InvalidProviderToken") { r, k in
        let jwt = k.forged(header: #"{"alg":"ES256","kid":"KEY1234567"}"#, claims: #"{"iss":"TEAM123456","iat":\#(iatNow()).5}"#)
        r.headers.replaceOrAdd(name: "authorization", value: "bearer " + jwt)
    },
    .init(name: "iat two hours old", status: 403, reason: "ExpiredProviderToken") { r, k in
        r.headers.replaceOrAdd(name: "authorization", value: "bearer " + k.valid(ageSeconds: 7_200))
    },
    .init(name: "another key on the same connection", status: 403, reason: "UnrelatedKeyIdInToken") { r, k in
        r.headers.replaceOrAdd(name: "authorization", value: "bearer " + k.otherKey.makeToken(issuedAt: Date()))
    },
    .init(name: "token changed within 20 minutes", status: 429, reason: "TooManyProviderTokenUpdates") { r, k in
        r.headers.replaceOrAdd(name: "authorization", value: "bearer " + k.valid(ageSeconds: 60))
    },
    .init(name: "no topic", status: 400, reason: "MissingTopic") { r, _ in r.headers.remove(name: "apns-topic") },
    .init(name: "unknown topic", status: 400, reason: "BadTopic") { r, _ in r.headers.replaceOrAdd(name: "apns-topic", value: "com.other.app") },
    .init(name: "unknown push type", status: 400, reason: "InvalidPushType") { r, _ in
        r.headers.replaceOrAdd(name: "apns-push-type", value: "banner")
    },
    .init(name: "priority 7", status: 400, reason: "BadPriority") { r, _ in r.headers.replaceOrAdd(name: "apns-priority", value: "7") },
    .init(name: "priority high", status: 400, reason: "BadPriority") { r, _ in r.headers.replaceOrAdd(name: "apns-priority", value: "high") },
    .init(name: "expiration not a number", status: 400, reason: "BadExpirationDate") { r, _ in
        r.headers.replaceOrAdd(name: "apns-expiration", value: "tomorrow")
    },
    .init(name: "collapse id 65 bytes", status: 400, reason: "BadCollapseId") { r, _ in
        r.headers.replaceOrAdd(name: "apns-collapse-id", value: String(repeating: "c", count: 65))
    },
    .init(name: "apns-id not a UUID", status: 400, reason: "BadMessageId") { r, _ in r.headers.replaceOrAdd(name: "apns-id", value: "not-a-uuid") },
    .init(name: "token 63 hex", status: 400, reason: "BadDeviceToken") { r, _ in r.path = "/3/device/" + validToken.dropLast() },
    .init(name: "token not hex", status: 400, reason: "BadDeviceToken") { r, _ in r.path = "/3/device/" + String(repeating: "zz", count: 32) },
    .init(name: "token 66 hex", status: 400, reason: "BadDeviceToken") { r, _ in r.path = "/3/device/" + validToken + "ab" },
    .init(name: "empty body", status: 400, reason: "PayloadEmpty") { r, _ in r.body = ByteBuffer() },
    .init(name: "JSON array", status: 400, reason: "PayloadEmpty") { r, _ in r.body = ByteBuffer(string: "[]") },
    .init(name: "no aps", status: 400, reason: "PayloadEmpty") { r, _ in r.body = ByteBuffer(string: #"{"alert":"hi"}"#) },
    .init(name: "4,097 bytes", status: 413, reason: "PayloadTooLarge") { r, _ in
        r.body = ByteBuffer(string: #"{"aps":{"alert":""# + String(repeating: "x", count: 4097 - 20) + #""}}"#)
    },
    .init(name: "VoIP 5,121 bytes", status: 413, reason: "PayloadTooLarge") { r, _ in
        r.headers.replaceOrAdd(name: "apns-push-type", value: "voip")
        r.headers.replaceOrAdd(name: "apns-topic", value: SimulatorFixture.topic + ".voip")
        r.body = ByteBuffer(string: #"{"aps":{"alert":""# + String(repeating: "x", count: 5121 - 20) + #""}}"#)
    },
    .init(name: "two topics", status: 400, reason: "DuplicateHeaders") { r, _ in r.headers.add(name: "apns-topic", value: SimulatorFixture.topic) },
    .init(name: "two authorizations", status: 400, reason: "DuplicateHeaders") { r, k in
        r.headers.add(name: "authorization", value: "bearer " + k.valid())
    },
]

@Suite("The simulator rejects what Apple rejects", .serialized)
struct SimulatorRejectionTests {
    @Test("malformed requests get Apple's status and reason", arguments: rejectionRows)
    func rejects(row: RejectionRow) async throws {
        #expect(rejectionRows.count >= 25)
        try await SimulatorFixture.with { f in
            let client = try f.makeClient(connections: 1)
            // A valid push first binds the connection to the key and its token, as at Apple.
            #expect(try await client.send(alert(validToken)).action == .done)
            let kit = TokenKit(fixtureKey: f.key, otherKey: f.otherKey, privateKey: f.privateKey)
            var headers = HPACKHeaders()
            headers.add(name: "authorization", value: await client.tokens.currentToken().authorizationHeader)
            headers.add(name: "apns-topic", value: SimulatorFixture.topic)
            headers.add(name: "apns-push-type", value: "alert")
            headers.add(name: "apns-priority", value: "10")
            headers.add(name: "apns-id", value: UUID().uuidString)
            var request = HTTP2Request(
                path: "/3/device/" + validToken, headers: headers,
                body: ByteBuffer(string: #"{"aps":{"alert":"hi"}}"#))
            row.mutate(&request, kit)
            let response = try await client.execute(request, deadline: .now() + .seconds(5))
            #expect(response.status == row.status)
            let body = try JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
            #expect(body?["reason"] as? String == row.reason)
            #expect(response.headers.first(name: "apns-id") != nil)
            // Nothing rejected is recorded.
            #expect(f.simulator.notifications().count == 1)
            await client.shutdown()
        }
    }

    @Test("410 carries the timestamp in milliseconds")
    func unregisteredTimestamp() async throws {
        try await SimulatorFixture.with { f in
            try f.simulator.inject(SimulatorFault(kind: .unregistered, token: validToken, timestampMs: 1_712_345_678_901))
            let client = try f.makeClient(connections: 1)
            let result = try await client.send(alert(validToken))
            #expect(result == .rejected(
                status: 410, reason: .unregistered, timestamp: Date(timeIntervalSince1970: 1_712_345_678.901), retryAfter: nil))
            await client.shutdown()
        }
    }

    @Test("Apple's two hosts: a token of one environment pushed on the other's host is 400 BadDeviceToken; a token never named goes on either")
    func environments() async throws {
        try await SimulatorFixture.with { f in
            let production = f.simulator.issueToken(environment: .production)
            let sandbox = f.simulator.issueToken(environment: .sandbox)
            let onProduction = try f.makeClient(connections: 1, environment: .production)
            let onSandbox = try f.makeClient(connections: 1, environment: .sandbox)
            let badToken = APNsResult.rejected(status: 400, reason: .badDeviceToken, timestamp: nil, retryAfter: nil)
            #expect(try await onSandbox.send(alert(production)) == badToken)
            #expect(try await onProduction.send(alert(sandbox)) == badToken)
            #expect(try await onProduction.send(alert(production)).action == .done)
            #expect(try await onSandbox.send(alert(sandbox)).action == .done)
            #expect(try await onProduction.send(alert(validToken)).action == .done)
            #expect(try await onSandbox.send(alert(validToken)).action == .done)
            #expect(f.simulator.notifications().map(\.token).sorted() == [production, sandbox, validToken, validToken].sorted())
            await onProduction.shutdown()
            await onSandbox.shutdown()
        }
    }
}
