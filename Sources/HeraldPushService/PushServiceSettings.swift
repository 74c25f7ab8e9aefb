/// A service's block in an app of `HERALD_CONFIG` (`apns: {key_path: …}`): its key and the
/// `HERALD_*` variable each of its keys stands for, so the file and the environment share one
/// reader and one set of checks.
public struct PushServiceSettingsBlock: Sendable {
    /// The block's key in an app (`apns`).
    public var key: String
    /// Each key of the block → the variable it stands for (`key_path` → `HERALD_APNS_KEY_PATH`).
    public var variables: [String: String]

    public init(key: String, variables: [String: String]) {
        self.key = key
        self.variables = variables
    }

    /// The block's key that stands for `variable`, if any.
    public func key(for variable: String) -> String? {
        variables.first { $0.value == variable }?.key
    }
}

/// Where a service's settings of one app were read.
public enum PushServiceSettingsSource: Sendable, Equatable {
    /// The `HERALD_*` variables: the single app "default".
    case environment
    /// The app's block in `HERALD_CONFIG`, or no block at all (the app's variables are then empty).
    case file
}
