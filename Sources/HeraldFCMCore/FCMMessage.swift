import HeraldPushCore

/// One FCM HTTP v1 message to one Android device, data-only: the app decrypts and shows the
/// text itself, so there is never a `notification` block.
public struct FCMMessage: Sendable, Hashable {
    /// Who receives it: exactly one target per request.
    public enum Target: Sendable, Hashable {
        /// An FCM registration token.
        case token(String)
        /// A Firebase Installation ID.
        case fid(String)
    }

    /// `android.priority`: high wakes the device and must end in something the user sees.
    public enum Priority: String, Sendable, Hashable {
        case high, normal
    }

    public var target: Target
    /// Every value a string (FCM refuses anything else).
    public var data: [String: String]
    public var priority: Priority
    /// `android.ttl` in whole seconds (0 ... 2,419,200); nil leaves FCM's four weeks.
    public var ttlSeconds: Int?
    /// `android.collapse_key`.
    public var collapseKey: String?

    /// FCM's limit on a message's `data`, keys and values together, in bytes.
    public static let maximumDataBytes = 4096
    /// FCM's longest `ttl`: four weeks.
    public static let maximumTTLSeconds = 2_419_200

    public init(target: Target, data: [String: String], priority: Priority, ttlSeconds: Int? = nil, collapseKey: String? = nil) {
        self.target = target
        self.data = data
        self.priority = priority
        self.ttlSeconds = ttlSeconds
        self.collapseKey = collapseKey
    }

    /// The bytes FCM counts against its 4,096: every key and value of `data`.
    public var dataBytes: Int { Self.dataBytes(of: data) }

    /// The bytes FCM counts of a data map: every key and value.
    public static func dataBytes(of data: [String: String]) -> Int { data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count } }

    /// Data keys FCM reserves: `from`, `notification`, `message_type`, and anything starting with
    /// `google` or `gcm`.
    public static func isReservedDataKey(_ key: String) -> Bool {
        let lower = key.lowercased()
        return ["from", "notification", "message_type", "collapse_key"].contains(lower) || lower.hasPrefix("google") || lower.hasPrefix("gcm")
    }

    /// Checks what FCM would refuse with a 400: size, reserved keys, ttl, an empty target.
    public func validate() throws(FCMValidationError) {
        switch target {
        case .token(let value), .fid(let value):
            guard !value.isEmpty, value.utf8.count <= 4096 else { throw FCMValidationError(field: "message.token", reason: "is empty or longer than 4 KiB") }
        }
        guard dataBytes <= Self.maximumDataBytes else {
            throw FCMValidationError(field: "message.data", reason: "is \(dataBytes) bytes, over FCM's \(Self.maximumDataBytes)")
        }
        if let key = data.keys.sorted().first(where: Self.isReservedDataKey) {
            throw FCMValidationError(field: "message.data", reason: "\(key) is a key FCM reserves")
        }
        if let ttlSeconds, !(0...Self.maximumTTLSeconds).contains(ttlSeconds) {
            throw FCMValidationError(field: "message.android.ttl", reason: "is outside 0...\(Self.maximumTTLSeconds) s")
        }
    }

    /// The request body: `{"message":{"android":{collapse_key, priority, ttl}, "data", "token"|"fid"}}`,
    /// keys sorted, written by `JSONValue`'s writer (Foundation's `JSONEncoder` took a quarter of
    /// `herald send`'s CPU a message).
    public func encoded() -> [UInt8] {
        var android: [JSONValue.Field] = []
        if let collapseKey { android.append(.init("collapse_key", .string(collapseKey))) }
        android.append(.init("priority", .string(priority.rawValue)))
        if let ttlSeconds { android.append(.init("ttl", .string("\(ttlSeconds)s"))) }
        let recipient: JSONValue.Field =
            switch target {
            case .token(let token): .init("token", .string(token))
            case .fid(let fid): .init("fid", .string(fid))
            }
        let message: JSONValue = .object([
            .init("android", .object(android)),
            .init("data", .sortedObject(data.mapValues { .string($0) })),
            recipient,
        ])
        return JSONValue.object([.init("message", message)]).encoded
    }
}

/// A message FCM would refuse; nothing was sent.
public struct FCMValidationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The message field at fault, as FCM names it (`message.data`).
    public var field: String
    public var reason: String
    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }
    public var description: String { "\(field): \(reason)" }
}
