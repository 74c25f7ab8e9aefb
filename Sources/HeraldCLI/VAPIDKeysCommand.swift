import ArgumentParser
import Crypto
import Foundation
import HeraldWebPushCore

/// `herald vapid-keys --out DIR`: makes an app's VAPID key pair for Web Push (RFC 8292), writes the
/// private key to `DIR/vapid-private.pem` (mode 0600, or 0640 for `--group`) and prints the application server key a web
/// app passes to `pushManager.subscribe`. It never overwrites a key: subscriptions are bound to it
/// for life, so replacing it ends every one of them.
struct VAPIDKeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vapid-keys", abstract: "Make a VAPID key pair for Web Push: DIR/vapid-private.pem and the application server key.")

    @Option(help: "Folder for vapid-private.pem (created if missing).") var out: String
    @Option(help: "The group that may read the key (mode 0640), the one Herald's service runs in: herald for the .deb's unit.")
    var group: String?

    func run() throws {
        let key = VAPIDKey(privateKey: P256.Signing.PrivateKey())
        let path = try PrivateFile.createKey(
            "vapid-private.pem", in: out, contents: Data(key.pem.utf8), replacing: "a new key would end every subscription made with it",
            group: group)
        CLIOutput.printJSON(["private_key_path": path, "application_server_key": key.applicationServerKey])
    }
}
