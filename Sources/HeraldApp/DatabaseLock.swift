#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HeraldPushCore

/// `herald serve`'s hold on its SQLite file: an exclusive `flock` on `<path>.lock`, kept until the
/// process ends (the kernel drops it if the process dies). A second server on the same file exits
/// 2 naming `HERALD_DATABASE_URL`. The lock is on a file of its own: a descriptor to the database
/// file itself, once closed, would drop SQLite's own locks on it.
struct DatabaseLock {
    private let fd: Int32

    init(path: String) throws {
        let lockPath = path + ".lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw HeraldConfigurationError(field: "HERALD_DATABASE_URL", message: "cannot open \(lockPath) (errno \(errno))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw HeraldConfigurationError(
                field: "HERALD_DATABASE_URL", message: "\(path) is in use by another herald serve (it holds \(lockPath)); one server per SQLite file")
        }
        self.fd = fd
    }

    func release() {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
