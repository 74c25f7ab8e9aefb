/// Why a request to a push service got no HTTP answer: one type for every service and for the
/// HTTP/2 transport that reports it.
public enum TransportFailure: Error, Hashable, Sendable, CustomStringConvertible {
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
