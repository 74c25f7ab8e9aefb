import HeraldCore
public import HeraldPushCore

/// What a push service carries, as signing and sealing need to know it: the largest payload per
/// push type, and whether a push's body reaches only the device (Web Push's is encrypted to the
/// browser, so its service sees only the headers). Each `PushService` gives its own.
public struct PushCarriage: Sendable {
    /// The largest payload it carries for a push type, in bytes.
    public var maximumPayload: @Sendable (PushType) -> Int
    /// Whether the service sees only a push's headers: its collapse id goes opaque even unsealed.
    public var bodyReachesOnlyTheDevice: Bool

    public init(maximumPayload: @escaping @Sendable (PushType) -> Int, bodyReachesOnlyTheDevice: Bool = false) {
        self.maximumPayload = maximumPayload
        self.bodyReachesOnlyTheDevice = bodyReachesOnlyTheDevice
    }

    /// A service that carries `bytes` of any push, and reads its body.
    public static func upTo(_ bytes: Int) -> PushCarriage { PushCarriage(maximumPayload: { _ in bytes }) }
}
