import Foundation
import HeraldTestSupport
import HeraldWebPushCore
import Testing

@Suite("herald vapid-keys")
struct VAPIDKeysCommandTests {
    @Test("writes a 0600 PEM whose public key is the printed application server key; never overwrites it")
    func makesAndKeepsKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-vapid-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (code, json) = try runHerald(["vapid-keys", "--out", directory], environment: [:])
        #expect(code == 0)
        let path = try #require(json["private_key_path"] as? String)
        let printed = try #require(json["application_server_key"] as? String)
        #expect(printed.count == 87)
        let pem = try String(contentsOfFile: path, encoding: .utf8)
        #expect(try VAPIDKey(pem: pem).applicationServerKey == printed)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o600)

        let (again, refusal) = try runHerald(["vapid-keys", "--out", directory], environment: [:])
        #expect(again == 2 && refusal["field"] as? String == "out")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == pem, "the key is kept")
    }
}

/// `--group`: a key the service's group reads (0640), as the packaged unit's user `herald` must.
@Suite("Key commands' --group")
struct KeyGroupTests {
    @Test("signing-key and vapid-keys with --group write 0640 in that group (a new folder 0750); an unknown group is refused naming --group", arguments: ["signing-key", "vapid-keys"])
    func group(command: String) throws {
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("herald-group-\(UUID())")
        defer { try? FileManager.default.removeItem(at: parent) }
        let folder = parent.appendingPathComponent("keys").path
        let group = String(cString: getgrgid(getegid())!.pointee.gr_name)
        let (code, json) = try runHerald([command, "--out", folder, "--group", group], environment: [:])
        #expect(code == 0, "\(json)")
        let path = try #require(json["private_key_path"] as? String)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect(attributes[.posixPermissions] as? Int == 0o640)
        #expect((attributes[.groupOwnerAccountID] as? NSNumber)?.uint32Value == getegid())
        #expect(try FileManager.default.attributesOfItem(atPath: folder)[.posixPermissions] as? Int == 0o750)
        let (refused, refusal) = try runHerald([command, "--out", parent.appendingPathComponent("other").path, "--group", "no-such-group-herald"], environment: [:])
        #expect(refused == 2 && refusal["field"] as? String == "group", "\(refusal)")
    }

    @Test("a key file that is not there is reported as that, naming the variable, not as a bad key")
    func missingKeyFile() throws {
        let (code, json) = try runHerald(["serve"], environment: [
            "HERALD_HTTP_PORT": "0", "HERALD_SIGNING_KEY_PATH": "/nonexistent/signing-key.pem",
            "HERALD_DATABASE_URL": "sqlite:" + FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID()).sqlite").path,
        ])
        #expect(code == 2)
        #expect(json["field"] as? String == "HERALD_SIGNING_KEY_PATH")
        #expect((json["error"] as? String)?.contains("cannot read /nonexistent/signing-key.pem: No such file or directory") == true, "\(json)")
    }
}

/// The simulators' default output folders: made fresh by `mkdtemp` (mode 0700, a name no other
/// local user can guess and plant links in), never a predictable `herald-mock-<name>-<pid>`.
@Suite("Simulator commands' default folders")
struct SimulatorFolderTests {
    @Test("herald mock-fcm without --credentials-out writes into a fresh 0700 folder whose name is not its pid's")
    func freshFolder() throws {
        let readyPipe = Pipe()
        let process = try HeraldProcess(["mock-fcm", "--port", "0", "--control-port", "0"], environment: [:], stdout: readyPipe)
        defer { process.kill(SIGTERM) }
        let (ready, _, _) = try readyLine(readyPipe, of: "herald mock-fcm", from: process)
        let credentials = try #require(ready["credentials"] as? String)
        let folder = URL(fileURLWithPath: credentials).deletingLastPathComponent().path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect((try FileManager.default.attributesOfItem(atPath: folder)[.posixPermissions] as? Int) == 0o700)
        #expect(!folder.hasSuffix("-\(process.process.processIdentifier)"), "\(folder)")
        #expect((try FileManager.default.attributesOfItem(atPath: credentials)[.posixPermissions] as? Int) == 0o600)
    }
}
