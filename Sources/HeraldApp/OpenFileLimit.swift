#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's open-file limit (`RLIMIT_NOFILE`).
public enum OpenFileLimit {
    #if os(Linux)
    private static let resource = Int32(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif

    /// The soft limit now (1,024 when it cannot be read).
    public static func current() -> Int {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return 1_024 }
        return Int(clamping: min(limit.rlim_cur, rlim_t(Int32.max)))
    }

    /// Raises the soft limit to the hard one, as servers that expect many connections do (the
    /// default soft limit of 1,024 is reached by a thousand idle clients).
    public static func raiseToHardLimit() {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(resource, &limit)
    }
}
