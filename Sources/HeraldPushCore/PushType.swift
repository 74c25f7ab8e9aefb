/// What a push is, in the terms Herald's events and every push service share: Apple's
/// `apns-push-type` values, which the other services map to their own.
public enum PushType: String, Sendable, CaseIterable, Codable {
    case alert, background, voip, complication, fileprovider, mdm, liveactivity, location, pushtotalk, widgets, controls
}

/// How urgently a push goes: Apple's `apns-priority` values, which the other services map to
/// their own (FCM: high for immediate, normal otherwise).
public enum PushPriority: Int, Sendable, CaseIterable, Codable {
    /// Deliver immediately (alerts).
    case immediate = 10
    /// Deliver at a time that conserves power (background pushes must use this).
    case considerate = 5
    /// Deliver when the device is awake anyway.
    case low = 1
}

/// A push's collapse id: pushes with the same one replace each other on the device.
public enum CollapseID {
    /// The longest collapse id, in bytes (APNs's `apns-collapse-id` limit, the smallest of the services').
    public static let maximumSize = 64
}
