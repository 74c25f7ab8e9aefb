/// A setting Herald cannot use, naming it: every push service's client and transport throw this,
/// and the CLI answers it with the field at fault.
public struct HeraldConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public var field: String
    public var message: String
    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }
    public var description: String { "\(field): \(message)" }
}
