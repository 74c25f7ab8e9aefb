import NIOCore
import NIOHPACK

/// One HTTP/2 request as it goes on the wire. A provider builds it from its notification;
/// tests and tools may send raw (even malformed) ones.
public struct HTTP2Request: Sendable {
    public var method: String
    public var path: String
    /// Headers other than the pseudo-headers.
    public var headers: HPACKHeaders
    public var body: ByteBuffer

    public init(method: String = "POST", path: String, headers: HPACKHeaders, body: ByteBuffer) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }
}

/// The answer to an `HTTP2Request`.
public struct HTTP2Response: Sendable {
    public var status: Int
    public var headers: HPACKHeaders
    public var body: ByteBuffer

    public init(status: Int, headers: HPACKHeaders, body: ByteBuffer) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Why a request got no answer.
public enum HTTP2TransportFailure: Error, Hashable, Sendable, CustomStringConvertible {
    /// The request's deadline passed.
    case deadlineExceeded
    /// The connection closed or was reset with the request in flight; the server may or may not have it.
    case connectionClosed
    /// The server refused the stream before processing it (GOAWAY past its last stream, REFUSED_STREAM).
    case notProcessed
    /// No connection could be made.
    case connectFailed(String)
    /// An answer that is not HTTP/2 as expected (no :status, unreadable body).
    case protocolError(String)

    public var description: String {
        switch self {
        case .deadlineExceeded: "deadline exceeded"
        case .connectionClosed: "connection closed"
        case .notProcessed: "not processed (stream refused)"
        case .connectFailed(let s): "connect failed: \(s)"
        case .protocolError(let s): "protocol error: \(s)"
        }
    }
}

