import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

@testable import HeraldServer

/// Which answers close their connection: only one given before its own request's body ended.
@Suite("Connection guard: answers given early")
struct ConnectionGuardTests {
    func connection() throws -> EmbeddedChannel {
        let table = ConnectionTable(limits: ConnectionLimits(maximumConnections: 10))
        return EmbeddedChannel(handler: table.handler())
    }

    func request() -> HTTPRequestPart { .head(HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/v1/events")) }

    /// The head of the answer written now, as it leaves the guard.
    func answer(_ channel: EmbeddedChannel, _ status: HTTPResponse.Status) throws -> HTTPResponse? {
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: status)))
        guard case .head(let head) = try channel.readOutbound(as: HTTPResponsePart.self) else { return nil }
        return head
    }

    @Test("an answer before its request's body ended says Connection: close, and what the client sends after it goes no further")
    func earlyAnswer() throws {
        let channel = try connection()
        try channel.writeInbound(request())
        #expect(try channel.readInbound(as: HTTPRequestPart.self) != nil)
        #expect(try answer(channel, .unauthorized)?.headerFields[.connection] == "close")
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        _ = try channel.readOutbound(as: HTTPResponsePart.self)
        // The rest of the body, and a next request: read and dropped.
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "{}")))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        try channel.writeInbound(request())
        #expect(try channel.readInbound(as: HTTPRequestPart.self) == nil)
        _ = try? channel.finish()
    }

    @Test("a pipelined request still arriving does not close the connection on the answer to the one before it")
    func pipelinedAnswerKeepsConnection() throws {
        let channel = try connection()
        // The first request whole, the second's head only.
        try channel.writeInbound(request())
        try channel.writeInbound(HTTPRequestPart.end(nil))
        try channel.writeInbound(request())
        for _ in 0..<3 { _ = try channel.readInbound(as: HTTPRequestPart.self) }
        #expect(try answer(channel, .ok)?.headerFields[.connection] == nil)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        _ = try channel.readOutbound(as: HTTPResponsePart.self)
        // The second is answered before its body ends: that answer closes.
        #expect(try answer(channel, .contentTooLarge)?.headerFields[.connection] == "close")
        _ = try? channel.finish()
    }

    @Test("an answer to a request read whole keeps the connection open")
    func wholeRequestKeepsConnection() throws {
        let channel = try connection()
        try channel.writeInbound(request())
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "{}")))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(try answer(channel, .badRequest)?.headerFields[.connection] == nil)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        _ = try channel.readOutbound(as: HTTPResponsePart.self)
        try channel.writeInbound(request())
        #expect(try channel.readInbound(as: HTTPRequestPart.self) != nil)
        _ = try? channel.finish()
    }
}
