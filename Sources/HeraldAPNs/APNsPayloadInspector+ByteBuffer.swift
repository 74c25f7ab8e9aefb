public import HeraldAPNsCore
public import NIOCore

extension APNsPayloadInspector {
    /// Inspects a received body in place.
    public static func inspect(_ payload: ByteBuffer) throws(APNsPayloadError) -> APNsPayloadSummary {
        let result = payload.withUnsafeReadableBytes { bytes in
            Result { () throws(APNsPayloadError) in try inspect(bytes) }
        }
        return try result.get()
    }
}
