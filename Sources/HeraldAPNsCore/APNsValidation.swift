import HeraldPushCore
/// A notification that Apple would reject, caught before it costs a round trip
/// (and, on a real APNs connection, a drop of the stream limit to 1).
public struct APNsValidationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The field at fault: `device_token`, `topic`, `payload`, `collapse_id`, `priority`, `push_type`, `expiration`.
    public var field: String
    /// The reason Apple would answer with.
    public var reason: APNsReason
    /// A sentence for people.
    public var message: String

    public init(field: String, reason: APNsReason, message: String) {
        self.field = field
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(field): \(message) (\(reason))" }
}

/// Checks shared by the provider and the simulator: one definition of a well-formed token.
public enum APNsDeviceToken {
    /// The shortest token Apple issues today: 32 bytes as hex.
    public static let minimumLength = 64
    /// A generous ceiling; Apple has said tokens may grow.
    public static let maximumLength = 200

    /// True when `token` is even-length hex of an acceptable length.
    public static func isWellFormed(_ token: Substring) -> Bool {
        let utf8 = token.utf8
        guard utf8.count >= minimumLength, utf8.count <= maximumLength, utf8.count % 2 == 0 else { return false }
        return isHex(token)
    }

    /// Every byte a hex digit, read from the string's contiguous UTF-8 (a substring's view steps
    /// through index checks a byte at a time).
    static func isHex(_ token: Substring) -> Bool {
        var token = token
        return token.withUTF8 { bytes in bytes.allSatisfy { $0.isHexDigit } }
    }

    /// `token` in the lowercase Herald stores and sends, copied only when it has an uppercase
    /// letter: a stored token is lowercase already, and `lowercased()` copies every time.
    public static func lowercased(_ token: String) -> String {
        // Over the contiguous UTF-8: stepping `utf8` costs more than the copy it saves.
        let hasUppercase = token.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.contains { $0 &- UInt8(ascii: "A") < 26 }
        }
        return hasUppercase == false ? token : token.lowercased()
    }

    /// True when `token` is exactly what the simulator (like Apple today) accepts: 64 hex characters.
    public static func isAppleLength(_ token: Substring) -> Bool {
        token.utf8.count == minimumLength && isHex(token)
    }

    /// A log-safe form: the first 8 characters and an ellipsis.
    public static func redacted(_ token: some StringProtocol) -> String { DeviceToken.redacted(token) }
}

extension APNsNotification {
    /// The largest `apns-collapse-id` Apple accepts, in bytes.
    public static let maximumCollapseIDSize = CollapseID.maximumSize

    /// Checks everything Apple would reject and what contradicts the push type.
    /// - Parameter known: this payload's summary, when the caller inspected the same bytes
    ///   already (a batch whose pushes share one payload): its inspection is not repeated.
    /// - Returns: the payload summary, for callers that want it.
    @discardableResult
    public func validate(payloadSummary known: APNsPayloadSummary? = nil) throws(APNsValidationError) -> APNsPayloadSummary {
        guard APNsDeviceToken.isWellFormed(Substring(deviceToken)) else {
            throw APNsValidationError(
                field: "device_token", reason: .badDeviceToken,
                message: "a device token is \(APNsDeviceToken.minimumLength)+ hexadecimal characters")
        }
        guard !topic.isEmpty else {
            throw APNsValidationError(field: "topic", reason: .missingTopic, message: "apns-topic is required")
        }
        if let collapseID, collapseID.utf8.count > Self.maximumCollapseIDSize {
            throw APNsValidationError(
                field: "collapse_id", reason: .badCollapseId,
                message: "apns-collapse-id is at most \(Self.maximumCollapseIDSize) bytes")
        }
        if let expiration, expiration < 0 {
            throw APNsValidationError(
                field: "expiration", reason: .badExpirationDate, message: "apns-expiration is a unix time, 0 or later")
        }
        let limit = pushType.maximumPayloadSize
        guard payload.count <= limit else {
            throw APNsValidationError(
                field: "payload", reason: .payloadTooLarge,
                message: "payload is \(payload.count) bytes; \(pushType.rawValue) pushes allow \(limit)")
        }
        let summary: APNsPayloadSummary
        do {
            if let known { summary = known } else { summary = try APNsPayloadInspector.inspect(payload) }
        } catch {
            switch error {
            case .empty:
                throw APNsValidationError(field: "payload", reason: .payloadEmpty, message: "payload is empty")
            case .notJSONObject:
                throw APNsValidationError(
                    field: "payload", reason: .payloadEmpty, message: "payload is not a JSON object")
            case .missingAPSDictionary:
                throw APNsValidationError(
                    field: "payload", reason: .payloadEmpty, message: "payload has no \"aps\" dictionary")
            }
        }
        try checkConsistency(summary)
        return summary
    }

    private func checkConsistency(_ summary: APNsPayloadSummary) throws(APNsValidationError) {
        switch pushType {
        case .background:
            guard summary.contentAvailable == 1 else {
                throw APNsValidationError(
                    field: "push_type", reason: .invalidPushType,
                    message: "a background push needs aps.content-available = 1")
            }
            guard !summary.isUserVisible else {
                throw APNsValidationError(
                    field: "push_type", reason: .invalidPushType,
                    message: "a background push must not carry alert, badge or sound")
            }
            guard priority == .considerate else {
                throw APNsValidationError(
                    field: "priority", reason: .badPriority, message: "background pushes must use priority 5")
            }
        case .alert:
            guard summary.isUserVisible else {
                throw APNsValidationError(
                    field: "push_type", reason: .invalidPushType,
                    message: "an alert push needs aps.alert, aps.badge or aps.sound")
            }
        case .voip:
            try requireTopicSuffix(".voip")
        case .complication:
            try requireTopicSuffix(".complication")
        case .fileprovider:
            try requireTopicSuffix(".pushkit.fileprovider")
        case .liveactivity:
            try requireTopicSuffix(".push-type.liveactivity")
        case .location:
            try requireTopicSuffix(".location-query")
        case .pushtotalk:
            try requireTopicSuffix(".voip-ptt")
        case .mdm, .widgets, .controls:
            break
        }
    }

    private func requireTopicSuffix(_ suffix: String) throws(APNsValidationError) {
        guard topic.hasSuffix(suffix) else {
            throw APNsValidationError(
                field: "topic", reason: .badTopic,
                message: "\(pushType.rawValue) pushes go to a topic ending in \(suffix)")
        }
    }
}
