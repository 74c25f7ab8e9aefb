// The transport speaks the value core's types; importing the transport brings them along.
@_exported import HeraldAPNsCore
@_exported import HeraldHTTP2
import NIOCore

/// The HTTP/2 request and answer APNs is spoken in (tools and tests send raw ones).
public typealias APNsHTTPRequest = HTTP2Request
public typealias APNsHTTPResponse = HTTP2Response
/// A configuration value the APNs client cannot use.
public typealias APNsConfigurationError = HTTP2ConfigurationError

extension APNsPayloadInspector {
    /// Inspects a received body in place.
    public static func inspect(_ payload: ByteBuffer) throws(APNsPayloadError) -> APNsPayloadSummary {
        let result = payload.withUnsafeReadableBytes { bytes in
            Result { () throws(APNsPayloadError) in try inspect(bytes) }
        }
        return try result.get()
    }
}
