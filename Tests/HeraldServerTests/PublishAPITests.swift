import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldDelivery
import HeraldPushCore
import HeraldServer
import HeraldStore
import Hummingbird
import HummingbirdTesting
import Testing

let txID = String(repeating: "0f", count: 32)
let publisher: HTTPFields = [.contentType: "application/json", .authorization: "Bearer pk"]

func kasiaBody(_ fields: String, template: String = "kasia.contextual_message") -> String {
    #"{"template":"\#(template)","fields":{\#(fields)}}"#
}

let goodKasiaFields = #""tx_id":"\#(txID)","sender":"\#(kaspaA)","alias":"a1","timestamp":1704067200,"daa_score":1"#

let badPublishRequests: [BadRequest] = [
    BadRequest("no publisher key", .post, "/v1/events", kasiaBody(goodKasiaFields), .unauthorized, field: nil),
    BadRequest("wrong publisher key", .post, "/v1/events", kasiaBody(goodKasiaFields),
               headers: [.contentType: "application/json", .authorization: "Bearer nope"], .unauthorized, field: nil),
    BadRequest("not JSON", .post, "/v1/events", "{", headers: publisher, field: "body"),
    BadRequest("unknown template", .post, "/v1/events", #"{"template":"sms","targets":{"tokens":[]},"fields":{}}"#, headers: publisher, field: "template"),
    BadRequest("template missing", .post, "/v1/events", #"{"fields":{}}"#, headers: publisher, field: "template"),
    BadRequest("fields not an object", .post, "/v1/events", #"{"template":"custom","fields":[]}"#, headers: publisher, field: "fields"),
    BadRequest("custom without aps", .post, "/v1/events", #"{"template":"custom","targets":{"keys":["session:x"]},"fields":{"data":{}}}"#, headers: publisher, field: "fields.aps"),
    BadRequest("custom background with alert", .post, "/v1/events", #"{"template":"custom","targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"},"push_type":"background"}}"#, headers: publisher, .unprocessableContent, field: "fields.push_type"),
    BadRequest("custom fcm not an object", .post, "/v1/events", #"{"template":"custom","targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"},"fcm":"x"}}"#, headers: publisher, field: "fields.fcm"),
    BadRequest("custom fcm with a notification block", .post, "/v1/events", #"{"template":"custom","targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"},"fcm":{"data":{},"notification":{"title":"t"}}}}"#, headers: publisher, .unprocessableContent, field: "fields.fcm.notification"),
    BadRequest("custom fcm data with a number", .post, "/v1/events", #"{"template":"custom","targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"},"fcm":{"data":{"n":1}}}}"#, headers: publisher, .unprocessableContent, field: "fields.fcm.data.n"),
    BadRequest("custom fcm data with a reserved key", .post, "/v1/events", #"{"template":"custom","targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"},"fcm":{"data":{"google.x":"y"}}}}"#, headers: publisher, .unprocessableContent, field: "fields.fcm.data.google.x"),
    BadRequest("custom fcm data over 4,096 bytes", .post, "/v1/events", #"{"template":"custom","targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"},"fcm":{"data":{"big":"\#(String(repeating: "b", count: 4_100))"}}}}"#, headers: publisher, .contentTooLarge, field: "fields.fcm.data"),
    BadRequest("custom without targets", .post, "/v1/events", #"{"template":"custom","fields":{"aps":{"alert":"x"}}}"#, headers: publisher, .unprocessableContent, field: "targets"),
    BadRequest("bad target key", .post, "/v1/events", #"{"template":"custom","targets":{"keys":["\#(badKaspa)"]},"fields":{"aps":{"alert":"x"}}}"#, headers: publisher, field: "targets.keys[0]"),
    BadRequest("bad priority", .post, "/v1/events", #"{"template":"custom","priority":7,"targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"}}}"#, headers: publisher, field: "priority"),
    BadRequest("kasia tx_id not hex", .post, "/v1/events", kasiaBody(goodKasiaFields.replacingOccurrences(of: txID, with: "xyz")), headers: publisher, field: "fields.tx_id"),
    BadRequest("kasia bad sender checksum", .post, "/v1/events", kasiaBody(goodKasiaFields.replacingOccurrences(of: kaspaA, with: badKaspa)), headers: publisher, field: "fields.sender"),
    BadRequest("kasia timestamp a string", .post, "/v1/events", kasiaBody(goodKasiaFields.replacingOccurrences(of: "1704067200", with: #""soon""#)), headers: publisher, field: "fields.timestamp"),
    BadRequest("kasia timestamp below Int64", .post, "/v1/events", kasiaBody(goodKasiaFields.replacingOccurrences(of: "1704067200", with: "-9223372036854775809")), headers: publisher, field: "fields.timestamp"),
    BadRequest("kasia payload not hex", .post, "/v1/events", kasiaBody(goodKasiaFields + #","payload":"zz""#), headers: publisher, field: "fields.payload"),
    BadRequest("kasia payment without recipient", .post, "/v1/events", kasiaBody(goodKasiaFields, template: "kasia.payment"), headers: publisher, .unprocessableContent, field: "fields.recipient"),
    BadRequest("batch with one bad event", .post, "/v1/events:batch",
               #"{"events":[\#(kasiaBody(goodKasiaFields)),{"template":"nope","fields":{}}]}"#, headers: publisher, field: "events[1].template"),
    BadRequest("empty batch", .post, "/v1/events:batch", #"{"events":[]}"#, headers: publisher, field: "events"),
    // Read from the parsed body without JSONDecoder: every type is still checked, at its path.
    BadRequest("body an array", .post, "/v1/events", "[]", headers: publisher, field: "body"),
    BadRequest("a target key not a string", .post, "/v1/events", #"{"template":"custom","targets":{"keys":["session:x",7]},"fields":{"aps":{"alert":"x"}}}"#, headers: publisher, field: "targets.keys[1]"),
    BadRequest("targets not an object", .post, "/v1/events", #"{"template":"custom","targets":["session:x"],"fields":{"aps":{"alert":"x"}}}"#, headers: publisher, field: "targets"),
    BadRequest("priority a string", .post, "/v1/events", #"{"template":"custom","priority":"high","targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"}}}"#, headers: publisher, field: "priority"),
    BadRequest("expiration past Int64", .post, "/v1/events", #"{"template":"custom","expiration":99999999999999999999,"targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"}}}"#, headers: publisher, field: "expiration"),
    BadRequest("events not an array", .post, "/v1/events:batch", #"{"events":{}}"#, headers: publisher, field: "events"),
    BadRequest("a batch event not an object", .post, "/v1/events:batch", #"{"events":[\#(kasiaBody(goodKasiaFields)),1]}"#, headers: publisher, field: "events[1]"),
    BadRequest("a batch event's excluded ids not strings", .post, "/v1/events:batch",
               #"{"events":[\#(kasiaBody(goodKasiaFields)),{"template":"custom","exclude_device_ids":[null],"targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"}}}]}"#, headers: publisher, field: "events[1].exclude_device_ids[0]"),
]

@Suite("/v1/events: bad input is refused, names the field, and enqueues nothing", .serialized)
struct PublishBadInputTests {
    @Test("malformed publishes", arguments: badPublishRequests)
    func refused(request: BadRequest) async throws {
        try await withRegistrationServer { client, store in
            _ = try await send(client, .post, "/v1/push/register",
                #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["\#(kaspaA)","session:x"]}"#)
            let r = try await send(client, request.method, request.uri, request.body, headers: request.headers)
            #expect(r.status == request.status)
            let error = try #require(try json(r)["error"] as? [String: Any])
            #expect(error["field"] as? String == request.field)
            #expect(try await store.stats().deliveries.isEmpty)
        }
    }

    @Test("an unknown template's refusal lists the templates there are")
    func unknownTemplateNamesTheTemplates() async throws {
        try await withRegistrationServer { client, _ in
            let r = try await send(client, .post, "/v1/events", #"{"template":"sms","targets":{"tokens":[]},"fields":{}}"#, headers: publisher)
            let message = try #require((try json(r)["error"] as? [String: Any])?["message"] as? String)
            for template in ["custom", "kasia.handshake", "kasia.contextual_message", "kasia.payment", "session.message", "agent.event", "conversation.silent"] {
                #expect(message.contains(template), "\(message)")
            }
        }
    }

    @Test("a template of one's own is a file and one registry line: it renders, routes by its implied key, takes the event's options, is checked against the services' limits, and is documented")
    func addedTemplate() async throws {
        let templates = EventTemplateRegistry(EventTemplateRegistry.builtIn.templates + [GreetingTemplate()])
        try await withRegistrationServer(templates: templates) { client, store in
            _ = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["session:greetings"]}"#)
            let push = try await EventOptionsTests.published(client, store, #"{"template":"test.greeting","collapse_id":"g1","fields":{"name":"Ada"}}"#)
            #expect(push.map { String(decoding: $0.payload, as: UTF8.self) } == #"{"aps":{"alert":{"title":"Hello, Ada"}}}"#)
            #expect(push?.collapseID == "g1")
            // Its fields are read as the built-in templates' are: the field at fault named.
            let bad = try await send(client, .post, "/v1/events", #"{"template":"test.greeting","fields":{"name":""}}"#, headers: publisher)
            #expect(bad.status == .badRequest)
            #expect(try (json(bad)["error"] as? [String: Any])?["field"] as? String == "fields.name")
            // Apple's limits hold for it too: a greeting over 4 KB is refused before anything is committed.
            let long = String(repeating: "é", count: 3_000)  // within the reader's 4,096 characters, over 4 KB
            let refused = try await send(client, .post, "/v1/events", #"{"template":"test.greeting","fields":{"name":"\#(long)"}}"#, headers: publisher)
            #expect(refused.status == .contentTooLarge, "\(String(buffer: refused.body))")
            #expect(try (json(refused)["error"] as? [String: Any])?["field"] as? String == "fields")
            // The refusal of an unknown template lists it, and the served document describes it.
            let unknown = try await send(client, .post, "/v1/events", #"{"template":"sms","fields":{}}"#, headers: publisher)
            #expect(try ((json(unknown)["error"] as? [String: Any])?["message"] as? String)?.contains("test.greeting") == true)
            let document = String(buffer: try await send(client, .get, "/openapi.json").body)
            #expect(document.contains(#""const":"test.greeting""#) || document.contains(#""const" : "test.greeting""#), "the document has no test.greeting branch")
        }
    }

    @Test("a good publish answers 202 after the commit, with deliveries and unknown tokens")
    func accepted() async throws {
        try await withRegistrationServer { client, store in
            _ = try await send(client, .post, "/v1/push/register",
                #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["\#(kaspaA)"]}"#)
            var r = try await send(client, .post, "/v1/events", kasiaBody(goodKasiaFields), headers: publisher)
            #expect(r.status == .accepted)
            #expect(try json(r)["deliveries"] as? Int == 1)
            #expect(try await store.stats().deliveries[.pending] == 1)
            let other = String(repeating: "cd", count: 32)
            r = try await send(client, .post, "/v1/events",
                #"{"template":"custom","targets":{"tokens":["\#(token1.uppercased())","\#(other)"]},"fields":{"aps":{"alert":"x"}}}"#,
                headers: publisher)
            #expect(try json(r)["unknown_tokens"] as? [String] == [other])
            r = try await send(client, .post, "/v1/events:batch",
                #"{"events":[\#(kasiaBody(goodKasiaFields)),\#(kasiaBody(goodKasiaFields))]}"#, headers: publisher)
            #expect(r.status == .accepted)
            #expect((try json(r)["events"] as? [[String: Any]])?.count == 2)
            #expect(try await store.stats().deliveries[.pending] == 4)
            let metrics = String(buffer: try await send(client, .get, "/metrics").body)
            #expect(metrics.contains(#"herald_events_accepted_total{template="kasia.contextual_message"} 3"#))
            #expect(metrics.contains("herald_deliveries_created_total 4"))
        }
    }
}

@Suite("/v1/events: every template honours the event options, and every push is checked for size at publish", .serialized)
struct EventOptionsTests {
    /// Publishes `body` and returns the one push it created, claimed from the store.
    static func published(_ client: any TestClientProtocol, _ store: SQLiteStore, _ body: String) async throws -> RenderedPush? {
        let r = try await send(client, .post, "/v1/events", body, headers: publisher)
        #expect(r.status == .accepted, "\(String(buffer: r.body))")
        let claimed = try await store.claimDue(app: "default", platform: .ios, limit: 10, now: Date().addingTimeInterval(1), lease: .seconds(30))
        try await store.complete(claimed.map { .sent(id: $0.id) }, now: Date())
        #expect(claimed.count == 1)
        return claimed.first?.push
    }

    static func threadID(_ push: RenderedPush?) -> String? {
        guard let push, let root = try? JSONSerialization.jsonObject(with: Data(push.payload)) as? [String: Any] else { return nil }
        return (root["aps"] as? [String: Any])?["thread-id"] as? String
    }

    static let options = #""priority":5,"collapse_id":"c1","thread_id":"t1""#

    @Test("priority, collapse_id and thread_id on session.message, agent.event and kasia.*; conversation.silent collapses by conversation")
    func honoured() async throws {
        try await withRegistrationServer { client, store in
            _ = try await send(client, .post, "/v1/push/register",
                #"{"device_token":"\#(token1)","platform":"ios","device_id":"d1","watched_addresses":["\#(kaspaA)","session:x"]}"#)
            let session = #"{"template":"session.message",\#(Self.options),"fields":{"session_id":"x","message_id":"m","timestamp":1700000000}}"#
            let agent = #"{"template":"agent.event",\#(Self.options),"fields":{"hook_event_name":"Stop","device_name":"mac","session_id":"s"}}"#
            let kasia = #"{"template":"kasia.contextual_message",\#(Self.options),"fields":{\#(goodKasiaFields)}}"#
            for body in [session, agent, kasia] {
                let push = try await Self.published(client, store, body)
                #expect(push?.priority == .considerate && push?.collapseID == "c1" && Self.threadID(push) == "t1", "\(body)")
            }
            let silent = try await Self.published(client, store,
                #"{"template":"conversation.silent","targets":{"device_ids":["d1"]},"fields":{"conversation_id":"conv-42"}}"#)
            #expect(silent?.collapseID == "49933ea253b58d70fdf1ca26f4b1bca8")
            let named = try await Self.published(client, store,
                #"{"template":"conversation.silent","collapse_id":"mine","targets":{"device_ids":["d1"]},"fields":{"conversation_id":"conv-42"}}"#)
            #expect(named?.collapseID == "mine")
        }
    }

    static func aps(_ push: RenderedPush?) -> [String: Any] {
        guard let push, let root = try? JSONSerialization.jsonObject(with: Data(push.payload)) as? [String: Any] else { return [:] }
        return root["aps"] as? [String: Any] ?? [:]
    }

    static let presentation = #""sound":"chime.caf","category":"kasia.message","interruption_level":"time-sensitive","relevance_score":0.75,"badge":3"#

    @Test("sound, category, interruption level, relevance and badge on every alert template become Apple's aps keys; sound none takes a sound away; critical only where the app allows it")
    func presentationOptions() async throws {
        try await withRegistrationServer { client, store in
            _ = try await send(client, .post, "/v1/push/register",
                #"{"device_token":"\#(token1)","platform":"ios","device_id":"d1","watched_addresses":["\#(kaspaA)","session:x"]}"#)
            let session = #"{"template":"session.message",\#(Self.presentation),"fields":{"session_id":"x","message_id":"m","timestamp":1700000000}}"#
            let agent = #"{"template":"agent.event",\#(Self.presentation),"fields":{"hook_event_name":"Stop","device_name":"mac","session_id":"s"}}"#
            let kasia = #"{"template":"kasia.contextual_message",\#(Self.presentation),"fields":{\#(goodKasiaFields)}}"#
            let custom = #"{"template":"custom",\#(Self.presentation),"targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x","sound":"default","badge":9}}}"#
            for body in [session, agent, kasia, custom] {
                let aps = Self.aps(try await Self.published(client, store, body))
                #expect(aps["sound"] as? String == "chime.caf" && aps["category"] as? String == "kasia.message", "\(body): \(aps)")
                #expect(aps["interruption-level"] as? String == "time-sensitive" && aps["relevance-score"] as? Double == 0.75 && aps["badge"] as? Int == 3, "\(body): \(aps)")
            }
            let silenced = Self.aps(try await Self.published(client, store,
                #"{"template":"custom","sound":"none","targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x","sound":"default"}}}"#))
            #expect(silenced["sound"] == nil && silenced["alert"] as? String == "x", "\(silenced)")
            let refused = try await send(client, .post, "/v1/events",
                #"{"template":"session.message","interruption_level":"critical","fields":{"session_id":"x","message_id":"m","timestamp":1}}"#, headers: publisher)
            #expect(refused.status == .badRequest)
            #expect(try (json(refused)["error"] as? [String: Any])?["field"] as? String == "interruption_level")
        }
        var critical = AppSettings(id: "default", publishKeys: ["pk"])
        critical.allowsCriticalAlerts = true
        try await withRegistrationServer(configure: { [critical] in $0.apps = .single(critical) }) { client, store in
            _ = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["session:x"]}"#)
            let aps = Self.aps(try await Self.published(client, store,
                #"{"template":"session.message","interruption_level":"critical","fields":{"session_id":"x","message_id":"m","timestamp":1}}"#))
            #expect(aps["interruption-level"] as? String == "critical")
        }
    }

    @Test("presentation out of range is a 400 naming the field, and commits nothing", arguments: [
        (#""sound":"""#, "sound"), (#""sound":"\#(String(repeating: "s", count: 65))""#, "sound"), (#""sound":"a\u0007b""#, "sound"),
        (#""category":"has space""#, "category"), (#""category":"\#(String(repeating: "c", count: 65))""#, "category"),
        (#""interruption_level":"loud""#, "interruption_level"), (#""relevance_score":1.5"#, "relevance_score"),
        (#""relevance_score":-0.1"#, "relevance_score"), (#""relevance_score":"high""#, "relevance_score"), (#""badge":100000"#, "badge"),
        (#""badge":-1"#, "badge"),
    ])
    func presentationRefused(option: String, field: String) async throws {
        try await withRegistrationServer { client, store in
            _ = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["session:x"]}"#)
            let r = try await send(client, .post, "/v1/events",
                #"{"template":"session.message",\#(option),"fields":{"session_id":"x","message_id":"m","timestamp":1}}"#, headers: publisher)
            #expect(r.status == .badRequest, "\(option)")
            #expect(try (json(r)["error"] as? [String: Any])?["field"] as? String == field, "\(option)")
            #expect(try await store.stats().deliveries.isEmpty)
        }
    }

    @Test("options a push type cannot carry are refused with the field; a push over Apple's size is a 413 at publish", arguments: [
        (#"{"template":"conversation.silent","thread_id":"t","targets":{"device_ids":["d1"]},"fields":{"conversation_id":"c"}}"#, 422, "thread_id"),
        (#"{"template":"conversation.silent","priority":10,"targets":{"device_ids":["d1"]},"fields":{"conversation_id":"c"}}"#, 422, "priority"),
        (#"{"template":"conversation.silent","sound":"default","targets":{"device_ids":["d1"]},"fields":{"conversation_id":"c"}}"#, 422, "sound"),
        (#"{"template":"conversation.silent","badge":1,"targets":{"device_ids":["d1"]},"fields":{"conversation_id":"c"}}"#, 422, "badge"),
        (#"{"template":"custom","category":"c","targets":{"keys":["session:x"]},"fields":{"aps":{"content-available":1}}}"#, 422, "category"),
        (#"{"template":"session.message","collapse_id":"\#(String(repeating: "c", count: 65))","fields":{"session_id":"x","message_id":"m","timestamp":1}}"#, 422, "collapse_id"),
        // 64 characters, 128 bytes: not ASCII, as the document's pattern says.
        (#"{"template":"session.message","collapse_id":"\#(String(repeating: "é", count: 64))","fields":{"session_id":"x","message_id":"m","timestamp":1}}"#, 422, "collapse_id"),
        (#"{"template":"agent.event","fields":{"hook_event_name":"Notification","device_name":"\#(String(repeating: "d", count: 256))","session_id":"s","message":"\#(String(repeating: "m", count: 4_000))"}}"#, 413, "fields"),
        (#"{"template":"custom","targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"\#(String(repeating: "a", count: 5_000))"}}}"#, 413, "fields"),
        // A header carries it: ASCII only, whatever the document's maxLength allows besides.
        (#"{"template":"session.message","collapse_id":"line\nbreak","fields":{"session_id":"x","message_id":"m","timestamp":1}}"#, 422, "collapse_id"),
        (#"{"template":"custom","collapse_id":"\#(String(repeating: "é", count: 10))","targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"}}}"#, 422, "collapse_id"),
    ])
    func refused(body: String, status: Int, field: String) async throws {
        try await withRegistrationServer { client, store in
            _ = try await send(client, .post, "/v1/push/register",
                #"{"device_token":"\#(token1)","platform":"ios","device_id":"d1","watched_addresses":["session:x"]}"#)
            let r = try await send(client, .post, "/v1/events", body, headers: publisher)
            #expect(Int(r.status.code) == status)
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == field)
            #expect(try await store.stats().deliveries.isEmpty)
        }
    }
}

@Suite("/v1/events: a cap on deliveries per request", .serialized)
struct DeliveryCapTests {
    @Test("a batch of untargeted agent.events to every device stops at the cap: 413 naming the event, nothing committed")
    func capped() async throws {
        try await withRegistrationServer(maximumDeliveriesPerRequest: 5) { client, store in
            for i in 0..<3 {
                let token = String(repeating: String(format: "%02x", i + 1), count: 32)
                _ = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["session:x"]}"#)
            }
            let untargeted = #"{"template":"agent.event","fields":{"hook_event_name":"Stop","device_name":"mac","session_id":"s"}}"#
            var r = try await send(client, .post, "/v1/events:batch", #"{"events":[\#(untargeted),\#(untargeted)]}"#, headers: publisher)
            #expect(r.status == .contentTooLarge)
            #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "events[1]")
            #expect(try await store.stats().deliveries.isEmpty)
            // Within the cap, the same events go through.
            r = try await send(client, .post, "/v1/events", untargeted, headers: publisher)
            #expect(r.status == .accepted)
            #expect(try json(r)["deliveries"] as? Int == 3)
        }
    }
}

@Suite("/v1/events: expiration as the push services read it", .serialized)
struct ExpirationTests {
    @Test("absent: a day; past (0 included, Apple's apns-expiration 0): a now-or-never push tried for a minute; past 30 days: 30 days", arguments: [
        (nil, 86_400), (Int64(0), 60), (Int64(1), 60), (Int64.min, 60), (Int64(10_000_000_000_000_000), 30 * 86_400), (Int64.max, 30 * 86_400),
    ] as [(Int64?, Int)])
    func lifetime(expiration: Int64?, seconds: Int) async throws {
        try await withRegistrationServer(configure: { $0.apps = AppDirectory([AppSettings(id: "default", publishKeys: ["pk"])]) }) { client, store in
            _ = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(token1)","platform":"ios","watched_addresses":["session:x"]}"#)
            let option = expiration.map { #""expiration":\#($0),"# } ?? ""
            var r = try await send(client, .post, "/v1/events", #"{"template":"custom",\#(option)"targets":{"keys":["session:x"]},"fields":{"aps":{"alert":"x"}}}"#, headers: publisher)
            #expect(r.status == .accepted)
            let id = try #require(try json(r)["event_id"] as? String)
            r = try await send(client, .get, "/v1/events/\(id)", headers: [.authorization: "Bearer pk"])
            let body = try json(r)
            let lifetime = try #require(body["expires_at"] as? Int) - (try #require(body["created_at"] as? Int))
            #expect(lifetime == seconds)
            #expect((body["deliveries"] as? [String: Int])?["queued"] == 1)
        }
    }

    @Test("a session.message timestamp before 1970 is read, as RFC 3339 allows, into negative seconds")
    func before1970() async throws {
        try await withRegistrationServer { client, store in
            _ = try await send(client, .post, "/v1/push/register", #"{"device_token":"\#(token1)","platform":"ios","device_id":"d1","watched_addresses":["session:x"]}"#)
            let r = try await send(client, .post, "/v1/events",
                #"{"template":"session.message","fields":{"session_id":"x","message_id":"m","timestamp":"1969-12-31T23:59:00Z"}}"#, headers: publisher)
            #expect(r.status == .accepted)
            let payload = try #require(try await store.claimDue(app: "default", platform: .ios, limit: 1, now: Date(), lease: .seconds(30)).first?.push.payload)
            #expect(String(decoding: payload, as: UTF8.self).contains(#""timestamp":-60"#))
        }
    }
}

@Suite("GET /v1/events/{id}: what became of an event", .serialized)
struct EventStatusTests {
    @Test("after a sent push and a dead token: deliveries by state with the push service's reason, never a token; another app's key or an unknown id is 404")
    func eventStatus() async throws {
        try await withRegistrationServer(configure: {
            $0.apps = AppDirectory([AppSettings(id: "default", publishKeys: ["pk"]), AppSettings(id: "other", publishKeys: ["other-pk"])])
        }) { client, store in
            let alive = String(repeating: "a1", count: 32), dead = String(repeating: "d1", count: 32)
            for token in [alive, dead] {
                let r = try await send(client, .post, "/v1/push/register", #"{"app":"default","device_token":"\#(token)","platform":"ios","watched_addresses":["session:st"]}"#)
                #expect(r.status == .ok)
            }
            var r = try await send(client, .post, "/v1/events", #"{"template":"custom","targets":{"keys":["session:st"]},"fields":{"aps":{"alert":"x"}}}"#, headers: publisher)
            let id = try #require(try json(r)["event_id"] as? String)
            // Both still queued.
            r = try await send(client, .get, "/v1/events/\(id)", headers: [.authorization: "Bearer pk"])
            #expect(r.status == .ok)
            #expect((try json(r)["deliveries"] as? [String: Int]) == ["queued": 2, "sent": 0, "failed": 0, "expired": 0])
            // One sent, one refused as APNs refuses a dead token.
            let claimed = try await store.claimDue(app: "default", platform: .ios, limit: 10, now: Date(), lease: .seconds(30))
            try await store.complete(claimed.map { delivery in
                delivery.device.token == alive
                    ? .sent(id: delivery.id)
                    : .tokenDead(id: delivery.id, deviceRowID: delivery.device.rowID, since: nil, reason: "BadDeviceToken")
            }, now: Date())
            r = try await send(client, .get, "/v1/events/\(id)", headers: [.authorization: "Bearer pk"])
            let body = try json(r)
            #expect(body["event_id"] as? String == id && body["app"] as? String == "default" && body["template"] as? String == "custom")
            #expect((body["deliveries"] as? [String: Int]) == ["queued": 0, "sent": 1, "failed": 1, "expired": 0])
            #expect((body["reasons"] as? [String: [String: Int]]) == ["failed": ["BadDeviceToken": 1]])
            #expect(!String(buffer: r.body).contains(alive.prefix(16)) && !String(buffer: r.body).contains(dead.prefix(16)))
            // Not the other app's, not an unknown id, not without a key.
            #expect(try await send(client, .get, "/v1/events/\(id)", headers: [.authorization: "Bearer other-pk"]).status == .notFound)
            #expect(try await send(client, .get, "/v1/events/no-such-event", headers: [.authorization: "Bearer pk"]).status == .notFound)
            #expect(try await send(client, .get, "/v1/events/\(id)", headers: [:]).status == .unauthorized)
        }
    }
}
