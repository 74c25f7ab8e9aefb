import HeraldPushCore
public import NIOCore
public import NIOHPACK

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


