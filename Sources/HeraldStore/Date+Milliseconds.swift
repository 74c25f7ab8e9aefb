import Foundation

extension Date {
    /// Unix milliseconds, as stored (Apple's 410 timestamps are milliseconds too).
    package var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    package init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
