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
    /// Creates `path` (mode 0600, or 0640 owned by `group`) with `contents`; false if it exists or
    /// cannot be written. The group and mode are set before the first byte is written.
    static func create(_ path: String, contents: Data, group: gid_t? = nil) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if let group {
            guard fchown(fd, uid_t.max, group) == 0, fchmod(fd, 0o640) == 0 else {
                unlink(path)
                return false
            }
        }
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

    /// A new folder of this user's only (mode 0700) in the temporary directory, its name not
    /// guessable (`mkdtemp`): the simulators' default output folder. A predictable name there
    /// would let another local user plant links in it beforehand and have the command write
    /// through them.
    static func temporaryFolder(prefix: String) throws -> String {
        var template = Array((FileManager.default.temporaryDirectory.appendingPathComponent(prefix + "-XXXXXX").path).utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else { throw CLIOutput.invalid(field: "out", message: "cannot make a folder in \(FileManager.default.temporaryDirectory.path)") }
        return String(cString: template)
    }

    /// A key command's output: `name` in `directory`, a new file only. Without a group the file is
    /// 0600 and a folder it makes 0700; with one (the group the service runs in, `herald` for the
    /// packaged unit) the file is 0640 and a folder it makes 0750, both in that group.
    /// - Parameters:
    ///   - replacing: what a new key in place of an existing one would break, for the refusal.
    ///   - group: the group that may read the key, by name.
    /// - Returns: the file's path.
    /// - Throws: `CLIOutput.invalid` naming `out` or `group`.
    static func createKey(_ name: String, in directory: String, contents: Data, replacing: String, group: String? = nil) throws -> String {
        let path = URL(fileURLWithPath: directory).appendingPathComponent(name).path
        let gid = try group.map { name throws -> gid_t in
            guard let entry = getgrnam(name) else { throw CLIOutput.invalid(field: "group", message: "no group named \(name)") }
            return entry.pointee.gr_gid
        }
        guard !FileManager.default.fileExists(atPath: path) else {
            throw CLIOutput.invalid(field: "out", message: "\(path) exists: \(replacing); choose another folder")
        }
        if !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: gid == nil ? 0o700 : 0o750])
            } catch {
                throw CLIOutput.invalid(field: "out", message: "cannot create \(directory): \(error)")
            }
            if let gid, chown(directory, uid_t.max, gid) != 0 {
                throw CLIOutput.invalid(field: "group", message: "cannot give \(directory) to group \(group ?? ""): \(String(cString: strerror(errno)))")
            }
        }
        guard create(path, contents: contents, group: gid) else {
            throw CLIOutput.invalid(field: gid == nil ? "out" : "group", message: "cannot write \(path)" + (gid == nil ? "" : " readable to group \(group ?? "")"))
        }
        return path
    }
}
