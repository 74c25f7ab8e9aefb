import Foundation

/// A push service's `Retry-After` header (FCM, Web Push).
public enum RetryAfter {
    /// The delay in whole seconds within 0...3600; anything else (a date, garbage, a huge or
    /// negative number) is no hint.
    public static func delay(_ header: String?) -> Duration? {
        guard let header, let seconds = Int(header.trimmingCharacters(in: .whitespaces)), seconds >= 0 else { return nil }
        return .seconds(min(seconds, 3600))
    }
}
