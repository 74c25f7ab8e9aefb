import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A key file a setting names, read whole at start. A file the process cannot open is reported as
/// that (its owner and mode beside the user Herald runs as), so an operator fixes the permission
/// rather than remaking a key that was never bad.
public enum KeyFile {
    /// The file's text.
    /// - Parameters:
    ///   - path: the file a setting names.
    ///   - field: the setting, for the refusal.
    /// - Throws: `HeraldConfigurationError` naming `field`: missing, unreadable (with owner, mode
    ///   and Herald's user), or not text.
    public static func text(at path: String, field: String) throws(HeraldConfigurationError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HeraldConfigurationError(field: field, message: unreadable(path))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw HeraldConfigurationError(field: field, message: "\(path) is not a text (PEM) file")
        }
        return text
    }

    /// Why `path` cannot be read, as precisely as `stat` and `access` tell.
    static func unreadable(_ path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return "cannot read \(path): \(String(cString: strerror(errno)))"
        }
        if (info.st_mode & S_IFMT) == S_IFDIR { return "\(path) is a folder, not a key file" }
        let mode = String(info.st_mode & 0o7777, radix: 8)
        let owner = "\(userName(info.st_uid)):\(groupName(info.st_gid))"
        let me = "\(userName(geteuid())):\(groupName(getegid()))"
        let reason = access(path, R_OK) == 0 ? "it could not be read" : "permission denied"
        return "cannot read \(path) (\(reason)): it is \(owner), mode 0\(mode), and Herald runs as \(me); "
            + "make it readable to Herald's group (chgrp GROUP, chmod 0640, or the key command's --group GROUP)"
    }

    static func userName(_ uid: uid_t) -> String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return String(uid) }
        return String(cString: name)
    }

    static func groupName(_ gid: gid_t) -> String {
        guard let entry = getgrgid(gid), let name = entry.pointee.gr_name else { return String(gid) }
        return String(cString: name)
    }
}
