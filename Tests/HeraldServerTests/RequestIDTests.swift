import Foundation
@testable import HeraldServer
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Logging
import Synchronization
import Testing

@Suite("Request ids")
struct RequestIDTests {
    @Test("X-Request-ID: the caller's is echoed when it is 1–128 visible ASCII characters, else Herald makes one; error answers carry it too")
    func echoed() async throws {
        try await withRegistrationServer { client, _ in
            let given = try await send(client, .get, "/healthz", headers: [.xRequestID: "deploy-42/abc"])
            #expect(given.headers[.xRequestID] == "deploy-42/abc")
            let made = try #require(try await send(client, .get, "/healthz", headers: [:]).headers[.xRequestID])
            #expect(UUID(uuidString: made) != nil)
            #expect(try await send(client, .get, "/healthz", headers: [:]).headers[.xRequestID] != made)
            for unusable in ["has space", String(repeating: "a", count: 129), "naïve"] {
                let id = try #require(try await send(client, .get, "/healthz", headers: [.xRequestID: unusable]).headers[.xRequestID])
                #expect(id != unusable && UUID(uuidString: id) != nil, "\(unusable)")
            }
            let longest = String(repeating: "b", count: 128)
            #expect(try await send(client, .get, "/healthz", headers: [.xRequestID: longest]).headers[.xRequestID] == longest)
            let refused = try await send(client, .post, "/v1/push/register", "{}", headers: [.contentType: "application/json", .xRequestID: "r-1"])
            #expect(refused.status == .badRequest)
            #expect(refused.headers[.xRequestID] == "r-1")
            let unknown = try await send(client, .get, "/no/such/route", headers: [.xRequestID: "r-2"])
            #expect(unknown.status == .notFound)
            #expect(unknown.headers[.xRequestID] == "r-2")
        }
    }

    @Test("a log line written through the request's logger names its request_id")
    func logged() async throws {
        let sink = CapturedLogs()
        let router = Router()
        router.add(middleware: RequestIDMiddleware())
        router.get("/work") { _, context -> String in
            context.logger.notice("handled")
            return "ok"
        }
        let logger = Logger(label: "herald.test") { _ in CapturingLogHandler(sink: sink) }
        try await Application(router: router, logger: logger).test(.router) { client in
            _ = try await client.execute(uri: "/work", method: .get, headers: [.xRequestID: "trace-7"])
            _ = try await client.execute(uri: "/work", method: .get)
        }
        let handled = sink.lines.filter { $0.message == "handled" }
        #expect(handled.count == 2)
        #expect(handled.first?.metadata["request_id"] == "trace-7")
        #expect(handled.last.flatMap { $0.metadata["request_id"] }.flatMap { UUID(uuidString: $0) } != nil)
    }
}

/// Log lines a test reads back.
final class CapturedLogs: Sendable {
    private let state = Mutex<[(message: String, metadata: [String: String])]>([])
    var lines: [(message: String, metadata: [String: String])] { state.withLock { $0 } }
    func append(_ message: String, _ metadata: [String: String]) { state.withLock { $0.append((message, metadata)) } }
}

struct CapturingLogHandler: LogHandler {
    let sink: CapturedLogs
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { _, new in new }
        sink.append(event.message.description, all.mapValues(\.description))
    }
}
