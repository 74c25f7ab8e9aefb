// The transport speaks the value core's types; importing the transport brings them along.
@_exported import HeraldAPNsCore
@_exported import HeraldHTTP2
import NIOCore

/// The HTTP/2 request and answer APNs is spoken in (tools and tests send raw ones).
public typealias APNsHTTPRequest = HTTP2Request
public typealias APNsHTTPResponse = HTTP2Response
/// A configuration value the APNs client cannot use.
public typealias APNsConfigurationError = HTTP2ConfigurationError

extension APNsTransportFailure {
    /// The APNs view of an HTTP/2 transport failure.
    init(_ failure: HTTP2TransportFailure) {
        switch failure {
        case .deadlineExceeded: self = .deadlineExceeded
        case .connectionClosed: self = .connectionClosed
        case .notProcessed: self = .notProcessed
        case .connectFailed(let reason): self = .connectFailed(reason)
        case .protocolError(let reason): self = .protocolError(reason)
        }
    }
}

extension APNsPayloadInspector {
    /// Inspects a received body in place.
    public static func inspect(_ payload: ByteBuffer) throws(APNsPayloadError) -> APNsPayloadSummary {
        let result = payload.withUnsafeReadableBytes { bytes in
            Result { () throws(APNsPayloadError) in try inspect(bytes) }
        }
        return try result.get()
    }
}
