import ArgumentParser
import Crypto
import Foundation
import HeraldWebPushCore

/// `herald vapid-keys --out DIR`: makes an app's VAPID key pair for Web Push (RFC 8292), writes the
/// private key to `DIR/vapid-private.pem` (mode 0600) and prints the application server key a web
/// app passes to `pushManager.subscribe`. It never overwrites a key: subscriptions are bound to it
/// for life, so replacing it ends every one of them.
struct VAPIDKeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vapid-keys", abstract: "Make a VAPID key pair for Web Push: DIR/vapid-private.pem and the application server key.")

    @Option(help: "Folder for vapid-private.pem (created if missing).") var out: String

    func run() throws {
        let path = URL(fileURLWithPath: out).appendingPathComponent("vapid-private.pem").path
        guard !FileManager.default.fileExists(atPath: path) else {
            throw CLIOutput.invalid(
                field: "out", message: "\(path) exists: a new key would end every subscription made with it; choose another folder")
        }
        do {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CLIOutput.invalid(field: "out", message: "cannot create \(out): \(error)")
        }
        let key = VAPIDKey(privateKey: P256.Signing.PrivateKey())
        guard PrivateFile.create(path, contents: Data(key.pem.utf8)) else {
            throw CLIOutput.invalid(field: "out", message: "cannot write \(path)")
        }
        CLIOutput.printJSON(["private_key_path": path, "application_server_key": key.applicationServerKey])
    }
}
