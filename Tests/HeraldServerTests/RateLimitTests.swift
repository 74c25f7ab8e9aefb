import Foundation
import HeraldDelivery
import HeraldServer
import HeraldStore
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Testing

@Suite("Rate limits and input limits", .serialized)
struct RateLimitTests {
    static func register(_ i: Int) -> String {
        let hex = String(i, radix: 16)
        return #"{"device_token":"\#(String(repeating: "0", count: 64 - hex.count) + hex)","platform":"ios","watched_addresses":["session:s"]}"#
    }

    @Test("registration: a burst per client address, then 429 with Retry-After, and nothing stored")
    func registration() async throws {
        try await withRegistrationServer(configure: { $0.rateLimits.registration = .init(rate: 0.01, burst: 3) }) { client, store in
            for i in 0..<3 {
                #expect(try await send(client, .post, "/v1/push/register", Self.register(i)).status == .ok)
            }
            let refused = try await send(client, .post, "/v1/push/register", Self.register(3))
            #expect(refused.status == .tooManyRequests)
            // One token every 100 s: the next is at most 100 s away (less by however long the
            // machine took over the first three, which a loaded machine makes tens of seconds).
            #expect((1...100).contains(Int(refused.headers[.retryAfter] ?? "") ?? 0), "\(refused.headers)")
            #expect((try json(refused)["error"] as? [String: Any])?["code"] as? String == "rate_limited")
            // The compatibility routes share the address's bucket.
            let ghost = try await send(client, .post, "/apns/register", #"{"session_id":"s","device_token":"\#(String(repeating: "9", count: 64))"}"#)
            #expect(ghost.status == .tooManyRequests)
            #expect(try await store.stats().devices == ["default": ["ios": 3]])
            // Publishing is limited by key, not by address.
            let publish = try await send(client, .post, "/v1/events", #"{"template":"custom","targets":{"keys":["session:s"]},"fields":{"aps":{"alert":"x"}}}"#,
                                         headers: publisher)
            #expect(publish.status == .accepted)
        }
    }

    @Test("another spelling of a registration route (trailing slash, doubled slashes, an escape) is limited like the route")
    func spellings() async throws {
        try await withRegistrationServer(configure: { $0.rateLimits.registration = .init(rate: 0.01, burst: 2) }) { client, store in
            for i in 0..<2 {
                #expect(try await send(client, .post, "/v1/push/register", Self.register(i)).status == .ok)
            }
            for (i, path) in ["/v1/push/register/", "//v1/push/register", "/v1//push/register", "/v1/push/regist%65r"].enumerated() {
                let status = try await send(client, .post, path, Self.register(10 + i)).status
                #expect(status == .tooManyRequests || status == .notFound, "\(path) answered \(status)")
            }
            #expect(try await store.stats().devices == ["default": ["ios": 2]])
        }
    }

    @Test("publishing: a burst per publisher key; another key keeps its own")
    func publishing() async throws {
        try await withRegistrationServer(configure: {
            $0.apps = .single(AppSettings(id: "default", publishKeys: ["pk", "pk2"]))
            $0.rateLimits.publishing = .init(rate: 0.01, burst: 2)
        }) { client, _ in
            let event = #"{"template":"custom","targets":{"keys":["session:s"]},"fields":{"aps":{"alert":"x"}}}"#
            let second: HTTPFields = [.contentType: "application/json", .authorization: "Bearer pk2"]
            #expect(try await send(client, .post, "/v1/events", event, headers: publisher).status == .accepted)
            #expect(try await send(client, .post, "/v1/events:batch", #"{"events":[\#(event)]}"#, headers: publisher).status == .accepted)
            let refused = try await send(client, .post, "/v1/events", event, headers: publisher)
            #expect(refused.status == .tooManyRequests)
            #expect((90...100).contains(Int(refused.headers[.retryAfter] ?? "") ?? 0))
            #expect(try await send(client, .post, "/v1/events", event, headers: second).status == .accepted)
            // No key: 401 from the route, not a limit.
            #expect(try await send(client, .post, "/v1/events", event).status == .unauthorized)
        }
    }

    static let many = "[" + (0...1_000).map { "\"d\($0)\"" }.joined(separator: ",") + "]"
    static let long = String(repeating: "x", count: 257)

    @Test("every list and string in a body has a limit", arguments: [
        BadRequest("1,001 target tokens", .post, "/v1/events", #"{"template":"custom","targets":{"tokens":\#(many)},"fields":{"aps":{"alert":"x"}}}"#, headers: publisher, field: "targets.tokens"),
        BadRequest("1,001 target device ids", .post, "/v1/events", #"{"template":"custom","targets":{"device_ids":\#(many)},"fields":{"aps":{"alert":"x"}}}"#, headers: publisher, field: "targets.device_ids"),
        BadRequest("1,001 excluded device ids", .post, "/v1/events", #"{"template":"custom","targets":{"keys":["session:s"]},"exclude_device_ids":\#(many),"fields":{"aps":{"alert":"x"}}}"#, headers: publisher, field: "exclude_device_ids"),
        BadRequest("a device id of 257 bytes", .post, "/v1/events", #"{"template":"custom","targets":{"device_ids":["\#(long)"]},"fields":{"aps":{"alert":"x"}}}"#, headers: publisher, field: "targets.device_ids[0]"),
        BadRequest("a conversation id of 1,025 bytes", .post, "/v1/events", #"{"template":"conversation.silent","targets":{"device_ids":["d"]},"fields":{"conversation_id":"\#(String(repeating: "c", count: 1_025))"}}"#, headers: publisher, field: "fields.conversation_id"),
        BadRequest("a GhostTalk session id of 257 bytes", .post, "/apns/register", #"{"session_id":"\#(long)","device_token":"\#(token1)"}"#, field: "session_id"),
        BadRequest("an X-Device-ID of 257 bytes", .post, "/api/devices/token", #"{"apnsToken":"\#(token1)"}"#, headers: [.contentType: "application/json", HTTPField.Name("X-Device-ID")!: long], field: "X-Device-ID"),
        BadRequest("an agent.event device name of 257 bytes", .post, "/v1/events", #"{"template":"agent.event","fields":{"hook_event_name":"Stop","device_name":"\#(long)","session_id":"s"}}"#, headers: publisher, field: "fields.device_name"),
    ])
    func limits(request: BadRequest) async throws {
        try await withRegistrationServer { client, store in
            let response = try await send(client, request.method, request.uri, request.body, headers: request.headers)
            #expect(response.status == request.status)
            #expect((try json(response)["error"] as? [String: Any])?["field"] as? String == request.field)
            let stats = try await store.stats()
            #expect(stats.deliveries.isEmpty && stats.devices.isEmpty)
        }
    }
}

@Suite("Rate limiter buckets")
struct RateLimiterBucketTests {
    @Test("however many clients come at once, the buckets stay bounded; the least recently used go first")
    func bounded() {
        let limiter = RateLimiter(.init(rate: 0.001, burst: 1))
        let now = ContinuousClock.now
        for i in 0..<(RateLimiter.maximumBuckets + 1) {
            _ = limiter.take("client-\(i)", now: now.advanced(by: .milliseconds(i)))
        }
        #expect(limiter.bucketCount <= RateLimiter.maximumBuckets)
        // The most recent client kept its (empty) bucket; the oldest was dropped and starts afresh.
        let later = now.advanced(by: .milliseconds(RateLimiter.maximumBuckets + 1))
        #expect(limiter.take("client-\(RateLimiter.maximumBuckets)", now: later) != nil)
        #expect(limiter.take("client-0", now: later) == nil)
    }

    @Test("a tiny rate announces a bounded wait instead of overflowing", arguments: [1e-300, 1e-12, Double.leastNonzeroMagnitude])
    func tinyRate(rate: Double) {
        let limiter = RateLimiter(.init(rate: rate, burst: 1))
        let now = ContinuousClock.now
        #expect(limiter.take("k", now: now) == nil)
        let wait = limiter.take("k", now: now)
        #expect(wait != nil && wait! >= 1 && wait! <= 86_400)
        for i in 0..<10_001 { _ = limiter.take("many-\(i)", now: now) }  // past the pruning threshold: pruning must not overflow either
    }
}

@Suite("Devices per app", .serialized)
struct DeviceLimitTests {
    @Test("past max_devices a new token is refused (403 naming it) on every registration route; a known one may register again")
    func capped() async throws {
        try await withRegistrationServer(configure: {
            var app = AppSettings(id: "default", publishKeys: ["publisher-key-00001"])
            app.maximumDevices = 2
            $0.apps = .single(app)
        }) { client, store in
            func token(_ i: Int) -> String { String(repeating: String(format: "%02x", i), count: 32) }
            for i in 1...2 {
                #expect(try await send(client, .post, "/v1/push/register", RateLimitTests.register(i)).status == .ok)
            }
            var r = try await send(client, .post, "/v1/push/register", RateLimitTests.register(3))
            #expect(r.status == .forbidden)
            #expect((try json(r)["error"] as? [String: Any])?["code"] as? String == "device_limit")
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "device_token")
            r = try await send(client, .post, "/apns/register", #"{"session_id":"s","device_token":"\#(token(9))"}"#)
            #expect(r.status == .forbidden)
            r = try await send(client, .post, "/api/devices/token", #"{"apnsToken":"\#(token(9))"}"#,
                               headers: [.contentType: "application/json", HTTPField.Name("X-Device-ID")!: "d9"])
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "apnsToken")
            // A device already registered may register again (a new watch set).
            #expect(try await send(client, .post, "/v1/push/register", RateLimitTests.register(1)).status == .ok)
            #expect(try await store.deviceCount(app: "default") == 2)
        }
    }
}
