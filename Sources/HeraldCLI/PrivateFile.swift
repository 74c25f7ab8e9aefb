import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Files that hold a secret (a private key): created with mode 0600 from their first byte, never
/// over an existing file. `FileManager.createFile(atPath:contents:attributes:)` writes first and
/// sets the mode after, leaving the key readable by everyone meanwhile.
enum PrivateFile {
    /// Creates `path` (mode 0600) with `contents`; false if it exists or cannot be written.
    static func create(_ path: String, contents: Data) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return contents.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let written = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return false }
                offset += written
            }
            return true
        }
    }
}
