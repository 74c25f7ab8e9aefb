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

    /// A key command's output: `name` in `directory` (created 0700), a new file only.
    /// - Parameter replacing: what a new key in place of an existing one would break, for the refusal.
    /// - Returns: the file's path.
    /// - Throws: `CLIOutput.invalid` naming `out`.
    static func createKey(_ name: String, in directory: String, contents: Data, replacing: String) throws -> String {
        let path = URL(fileURLWithPath: directory).appendingPathComponent(name).path
        guard !FileManager.default.fileExists(atPath: path) else {
            throw CLIOutput.invalid(field: "out", message: "\(path) exists: \(replacing); choose another folder")
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CLIOutput.invalid(field: "out", message: "cannot create \(directory): \(error)")
        }
        guard create(path, contents: contents) else { throw CLIOutput.invalid(field: "out", message: "cannot write \(path)") }
        return path
    }
}
