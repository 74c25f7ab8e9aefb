import HeraldPushCore
public import NIOCore
public import NIOHPACK
package import NIOHTTP2

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

/// What the connection handler writes to `HTTP2ClientFramer`: a request whole, or any other
/// frame. A request's pseudo-headers are encoded straight into its header block beside its own
/// headers, with no merged `HPACKHeaders` to check and copy every name again, and its body
/// follows in the same write.
package enum HTTP2ClientWrite {
    case request(HTTP2OutgoingRequest)
    case frame(HTTP2Frame)

    var streamID: HTTP2StreamID {
        switch self {
        case .request(let request): request.streamID
        case .frame(let frame): frame.streamID
        }
    }
}

/// A request on its stream: a HEADERS frame of `:method`, `:scheme` (https), `:path` and
/// `:authority`, then `headers`; with a body, one DATA frame that ends the stream.
package struct HTTP2OutgoingRequest {
    package var streamID: HTTP2StreamID
    package var method: String
    package var path: String
    package var authority: String
    package var headers: HPACKHeaders
    package var body: ByteBuffer?

    package init(streamID: HTTP2StreamID, method: String, path: String, authority: String, headers: HPACKHeaders, body: ByteBuffer?) {
        self.streamID = streamID
        self.method = method
        self.path = path
        self.authority = authority
        self.headers = headers
        self.body = body
    }

    /// Its pseudo-headers in the order its header block carries them, `:path` unindexed (it
    /// changes with every request).
    func forEachPseudoHeader(_ body: (_ name: String, _ value: String, _ indexing: HPACKIndexing) -> Void) {
        body(":method", method, .indexable)
        body(":scheme", "https", .indexable)
        body(":path", path, .nonIndexable)
        body(":authority", authority, .indexable)
    }

    /// The same header list as one `HPACKHeaders`, in the order the block carries it
    /// (`ClientWritesAsFrames` hands NIOHTTP2 this).
    package var allHeaders: HPACKHeaders {
        var all = HPACKHeaders()
        forEachPseudoHeader { all.add(name: $0, value: $1, indexing: $2) }
        all.add(contentsOf: headers)
        return all
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


