import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldDelivery
import HeraldMatrix
import HeraldPushCore
import HeraldServer
import HeraldStore
import Hummingbird
import HummingbirdTesting
import Prometheus
import Testing

private let matrixApps = MatrixApps([
    MatrixApp(pattern: "im.example.ios", app: "default", kind: .apns),
    MatrixApp(pattern: "im.example.android.*", app: "default", kind: .fcm),
])
/// A 32-byte APNs token as Sygnal's pushkeys carry it (base64), and as Herald stores it (hex).
private let tokenBytes = (0..<32).map { UInt8($0 + 1) }
private let pushkey = Data(tokenBytes).base64EncodedString()
private let hexToken = tokenBytes.map { String(format: "%02x", $0) }.joined()
private let notifyPath = "/_matrix/push/v1/notify"

private func notify(eventID: String? = "$event1", devices: String, counts: String = #"{"unread":2}"#) -> String {
    let event = eventID.map { #""event_id":"\#($0)","room_id":"!room:example.org","type":"m.room.message","sender":"@a:example.org","#  } ?? #""type":null,"sender":"","#
    return #"{"notification":{\#(event)"counts":\#(counts),"devices":\#(devices)}}"#
}

private func device(_ appID: String = "im.example.ios", _ key: String = pushkey, ts: Int = 42) -> String {
    #"{"app_id":"\#(appID)","pushkey":"\#(key)","pushkey_ts":\#(ts),"data":{}}"#
}

private let badNotifies: [BadRequest] = [
    BadRequest("not JSON", .post, notifyPath, "{", field: "body"),
    BadRequest("no notification", .post, notifyPath, "{}", field: "notification"),
    BadRequest("no devices", .post, notifyPath, #"{"notification":{"event_id":"$e"}}"#, field: "notification.devices"),
    BadRequest("empty devices", .post, notifyPath, notify(devices: "[]"), field: "notification.devices"),
    BadRequest("device without pushkey", .post, notifyPath, notify(devices: #"[{"app_id":"im.example.ios"}]"#), field: "notification.devices[0].pushkey"),
    BadRequest("device without app_id", .post, notifyPath, notify(devices: #"[{"pushkey":"x"}]"#), field: "notification.devices[0].app_id"),
    BadRequest("pushkey_ts negative", .post, notifyPath, notify(devices: "[\(device(ts: -1))]"), field: "notification.devices[0].pushkey_ts"),
    BadRequest("pushkey_ts past year 9999", .post, notifyPath, notify(devices: "[\(device(ts: 253_402_300_800))]"), field: "notification.devices[0].pushkey_ts"),
    BadRequest("unread negative", .post, notifyPath, notify(devices: "[\(device())]", counts: #"{"unread":-1}"#), field: "notification.counts.unread"),
    BadRequest("unread not a number", .post, notifyPath, notify(devices: "[\(device())]", counts: #"{"unread":"2"}"#), field: "notification.counts.unread"),
    BadRequest("tweaks not an object", .post, notifyPath, notify(devices: #"[{"app_id":"im.example.ios","pushkey":"k","tweaks":[null]}]"#), field: "notification.devices[0].tweaks"),
    BadRequest("data not an object", .post, notifyPath, notify(devices: #"[{"app_id":"im.example.ios","pushkey":"k","data":"x"}]"#), field: "notification.devices[0].data"),
    BadRequest("pushkey not a string", .post, notifyPath, notify(devices: #"[{"app_id":"im.example.ios","pushkey":5}]"#), field: "notification.devices[0].pushkey"),
]

@Suite("Matrix push gateway: /_matrix/push/v1/notify", .serialized)
struct MatrixNotifyTests {
    @Test("bad notifies are refused with the field at fault, and change nothing", arguments: badNotifies)
    func refused(request: BadRequest) async throws {
        try await withRegistrationServer(matrix: matrixApps) { client, store in
            let r = try await send(client, request.method, request.uri, request.body, headers: request.headers)
            #expect(r.status == request.status)
            let error = try #require(try json(r)["error"] as? [String: Any])
            #expect(error["field"] as? String == request.field)
            let stats = try await store.stats()
            #expect(stats.deliveries.isEmpty && stats.devices.isEmpty)
        }
    }

    @Test("a notify is committed before its answer; the same (event_id, pushkey) again is accepted and not pushed twice")
    func durableAndDeduplicated() async throws {
        let metrics = HeraldMetrics.prometheus()
        try await withRegistrationServer(matrix: matrixApps, metrics: metrics) { client, store in
            let body = notify(devices: "[\(device())]")
            var r = try await send(client, .post, notifyPath, body)
            #expect(r.status == .ok)
            #expect(String(buffer: r.body) == #"{"rejected":[]}"#)
            #expect(try await store.stats().deliveries == [.pending: 1])
            #expect(try await store.devices(app: "default", tokens: [hexToken]).count == 1, "the pushkey is the device: no registration step")
            // Synapse re-POSTs after a timeout: the same answer, no second push.
            r = try await send(client, .post, notifyPath, body)
            #expect(String(buffer: r.body) == #"{"rejected":[]}"#)
            #expect(try await store.stats().deliveries == [.pending: 1])
            // Another event for the same pusher is a new push; badge-only updates are never deduplicated.
            _ = try await send(client, .post, notifyPath, notify(eventID: "$event2", devices: "[\(device())]"))
            _ = try await send(client, .post, notifyPath, notify(eventID: nil, devices: "[\(device())]"))
            _ = try await send(client, .post, notifyPath, notify(eventID: nil, devices: "[\(device())]"))
            #expect(try await store.stats().deliveries == [.pending: 4])
            let claimed = try await store.claimDue(app: "default", platform: .ios, limit: 10, now: Date(), lease: .seconds(30))
            let payloads = claimed.map { String(decoding: $0.push.payload, as: UTF8.self) }
            #expect(payloads.filter { $0.contains("$event1") }.count == 1)
            #expect(payloads.filter { $0 == #"{"aps":{"badge":2},"herald_source":"matrix"}"# }.count == 2)
            let scrape = String(decoding: metrics.1.emitToBuffer(), as: UTF8.self)
            #expect(scrape.contains(#"herald_matrix_deduplicated_total{matrix_app="im.example.ios"} 1"#))
            #expect(scrape.contains(#"herald_matrix_notifications_total{matrix_app="im.example.ios"} 5"#))
        }
    }

    @Test("rejected: an unknown app_id and a pushkey malformed for its platform; the other devices still get theirs")
    func rejectedPushkeys() async throws {
        try await withRegistrationServer(matrix: matrixApps) { client, store in
            let devices = [device("im.unknown.app", "key-a"), device("im.example.ios", "bm90IGEgdG9rZW4="), device(), device("im.example.android.x", "has space")]
            let r = try await send(client, .post, notifyPath, notify(devices: "[\(devices.joined(separator: ","))]"))
            #expect(r.status == .ok)
            #expect(try json(r)["rejected"] as? [String] == ["key-a", "bm90IGEgdG9rZW4=", "has space"])
            #expect(try await store.stats().deliveries == [.pending: 1])
        }
    }

    @Test("a token the push service called dead is rejected on the next notify, until its pusher is set again")
    func deadTokenRejected() async throws {
        try await withRegistrationServer(matrix: matrixApps) { client, store in
            _ = try await send(client, .post, notifyPath, notify(devices: "[\(device())]"))
            let claimed = try await store.claimDue(app: "default", platform: .ios, limit: 10, now: Date(), lease: .seconds(30))
            let delivery = try #require(claimed.first)
            // APNs: 410 Unregistered, as the outbox records it.
            try await store.complete([.tokenDead(id: delivery.id, deviceRowID: delivery.device.rowID, since: Date(), reason: "Unregistered")], now: Date())
            var r = try await send(client, .post, notifyPath, notify(eventID: "$event2", devices: "[\(device())]"))
            #expect(try json(r)["rejected"] as? [String] == [pushkey])
            #expect(try await store.stats().deliveries == [.failed: 1], "nothing more for a dead token")
            // The user set the pusher again later (a new pushkey_ts): the token is alive.
            let later = Int(Date().timeIntervalSince1970) + 60
            r = try await send(client, .post, notifyPath, notify(eventID: "$event3", devices: "[\(device(ts: later))]"))
            #expect(try json(r)["rejected"] as? [String] == [])
            #expect(try await store.stats().deliveries == [.failed: 1, .pending: 1])
        }
    }

    @Test("a pushkey_ts far in the future says nothing (it counts as 0): the token can still die, and stays dead")
    func futurePushkeyTS() async throws {
        try await withRegistrationServer(matrix: matrixApps) { client, store in
            let r = try await send(client, .post, notifyPath, notify(devices: "[\(device(ts: 253_402_300_799))]"))
            #expect(r.status == .ok)
            let stored = try #require(try await store.devices(app: "default", tokens: [hexToken]).first)
            #expect(stored.updatedAt <= Date())
            // The push service then calls the token dead: the device goes, and the next notify is rejected.
            let claimed = try await store.claimDue(app: "default", platform: .ios, limit: 10, now: Date(), lease: .seconds(30))
            let delivery = try #require(claimed.first)
            try await store.complete([.tokenDead(id: delivery.id, deviceRowID: delivery.device.rowID, since: Date(), reason: "Unregistered")], now: Date())
            let again = try await send(client, .post, notifyPath, notify(eventID: "$event2", devices: "[\(device(ts: 253_402_300_799))]"))
            #expect(try json(again)["rejected"] as? [String] == [pushkey])
        }
    }

    @Test("a notify never rewrites a device registered through another route, and pushes nothing to it (nor says so) unless the app opts in")
    func neverRewritesOthers() async throws {
        try await withRegistrationServer(matrix: matrixApps) { client, store in
            // The app registered this token itself, for production (the Matrix app would say sandbox).
            let r = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(hexToken)","platform":"ios","environment":"production","watched_addresses":["session:m"]}"#)
            #expect(r.status == .ok)
            let before = try #require(try await store.devices(app: "default", tokens: [hexToken]).first)
            let n = try await send(client, .post, notifyPath, notify(devices: "[\(device(ts: Int(Date().timeIntervalSince1970)))]"))
            #expect(n.status == .ok)
            #expect(try json(n)["rejected"] as? [String] == [])
            let after = try #require(try await store.devices(app: "default", tokens: [hexToken]).first)
            #expect(after.attributes.apnsEnvironment == .production && after.platform == before.platform && after.updatedAt == before.updatedAt)
            // Nothing for it: an unauthenticated notify naming a known token reaches no app device.
            #expect(try await store.stats().deliveries == [:])
        }
        // An app that opts in: the push goes to the device as registered.
        try await withRegistrationServer(configure: {
            var app = $0.apps.apps[0]
            app.matrixReachesRegisteredDevices = true
            $0.apps = AppDirectory([app])
        }, matrix: matrixApps) { client, store in
            let r = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(hexToken)","platform":"ios","environment":"production","watched_addresses":["session:m"]}"#)
            #expect(r.status == .ok)
            #expect(try await send(client, .post, notifyPath, notify(devices: "[\(device(ts: Int(Date().timeIntervalSince1970)))]")).status == .ok)
            #expect(try await store.stats().deliveries == [.pending: 1])
        }
    }

    @Test("max_devices holds under concurrency: 50 notifies and 50 registrations of new tokens at once leave exactly 10 devices")
    func deviceLimitUnderConcurrency() async throws {
        try await withRegistrationServer(configure: {
            var app = AppSettings(id: "default", publishKeys: ["pk"])
            app.maximumDevices = 10
            $0.apps = .single(app)
        }, matrix: matrixApps) { client, store in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<50 {
                    let key = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 * 7 + i) }).base64EncodedString()
                    group.addTask { Int(try await send(client, .post, notifyPath, notify(eventID: "$e\(i)", devices: "[\(device("im.example.ios", key))]")).status.code) }
                    let token = String(format: "%064x", i + 1_000)
                    group.addTask {
                        Int(try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["session:x"]}"#).status.code)
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 10, "\(statuses)")
            #expect(statuses.filter { $0 == 403 }.count == 90)
            #expect(try await store.deviceCount(app: "default") == 10)
        }
    }

    @Test("a notify cannot take an app past max_devices: the new pushkey is refused (403) and nothing is written; known ones go on")
    func deviceLimit() async throws {
        try await withRegistrationServer(configure: {
            var app = AppSettings(id: "default", publishKeys: ["pk"])
            app.maximumDevices = 2
            $0.apps = .single(app)
        }, matrix: matrixApps) { client, store in
            let keys = (1...3).map { i in Data((0..<32).map { UInt8($0 + i * 40) }).base64EncodedString() }
            for key in keys.prefix(2) {
                #expect(try await send(client, .post, notifyPath, notify(devices: "[\(device("im.example.ios", key))]")).status == .ok)
            }
            let r = try await send(client, .post, notifyPath, notify(eventID: "$third", devices: "[\(device("im.example.ios", keys[2]))]"))
            #expect(r.status == .forbidden)
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "notification.devices[0].pushkey")
            #expect(try await store.deviceCount(app: "default") == 2)
            #expect(try await store.stats().deliveries == [.pending: 2])
            // A device already known still gets its pushes.
            #expect(try await send(client, .post, notifyPath, notify(eventID: "$again", devices: "[\(device("im.example.ios", keys[0]))]")).status == .ok)
            #expect(try await store.stats().deliveries == [.pending: 3])
        }
    }

    @Test("per homeserver address: a rate (429 past it) and an optional allow-list of CIDRs (403 outside it)")
    func clientLimits() async throws {
        try await withRegistrationServer(configure: { $0.rateLimits.matrix = .init(rate: 0.001, burst: 3) }, matrix: matrixApps) { client, _ in
            var statuses: [HTTPResponse.Status] = []
            for i in 0..<4 { statuses.append(try await send(client, .post, notifyPath, notify(eventID: "$e\(i)", devices: "[\(device())]")).status) }
            #expect(statuses == [.ok, .ok, .ok, .tooManyRequests])
        }
        try await withRegistrationServer(configure: { $0.rateLimits.matrixClients = [IPNetwork("10.0.0.0/8")!] }, matrix: matrixApps) { client, store in
            let r = try await send(client, .post, notifyPath, notify(devices: "[\(device())]"))
            #expect(r.status == .forbidden)
            #expect(try await store.stats().devices.isEmpty)
            // Discovery stays open.
            #expect(try await send(client, .get, notifyPath).status == .ok)
        }
        try await withRegistrationServer(configure: { $0.rateLimits.matrixClients = [IPNetwork("127.0.0.0/8")!] }, matrix: matrixApps) { client, _ in
            let r = try await send(client, .post, notifyPath, notify(devices: "[\(device())]"))
            #expect(r.status == .ok)
        }
    }

    @Test("GET answers UnifiedPush's gateway discovery; no Matrix apps, no route")
    func discovery() async throws {
        try await withRegistrationServer(matrix: matrixApps) { client, _ in
            let r = try await send(client, .get, notifyPath)
            #expect(String(buffer: r.body) == #"{"unifiedpush":{"gateway":"matrix"}}"#)
        }
        try await withRegistrationServer { client, _ in
            let body = notify(devices: "[\(device())]")
            let r = try await send(client, .post, notifyPath, body)
            #expect(r.status == .notFound)
        }
    }
}
