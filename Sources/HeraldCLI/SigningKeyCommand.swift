import ArgumentParser
import Foundation
import HeraldDelivery

/// `herald signing-key --out DIR`: makes an app's Ed25519 key for signed pushes, writes it to
/// `DIR/signing-key.pem` (PKCS#8, mode 0600, or 0640 for `--group`) and prints the public key phones pin. It never
/// overwrites a key: phones that pinned it would refuse every push signed with another.
struct SigningKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signing-key", abstract: "Make an Ed25519 key for signed pushes: DIR/signing-key.pem and its public key.")

    @Option(help: "Folder for signing-key.pem (created if missing).") var out: String
    @Option(help: "The group that may read the key (mode 0640), the one Herald's service runs in: herald for the .deb's unit.")
    var group: String?

    func run() throws {
        let key = PushSigningKey()
        let path = try PrivateFile.createKey(
            "signing-key.pem", in: out, contents: Data(key.pem.utf8),
            replacing: "phones that pinned its public key would refuse pushes signed with a new one", group: group)
        CLIOutput.printJSON(["private_key_path": path, "algorithm": "Ed25519", "public_key": key.publicKeyBase64URL])
    }
}
