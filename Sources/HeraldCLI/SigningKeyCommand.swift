import ArgumentParser
import Foundation
import HeraldDelivery

/// `herald signing-key --out DIR`: makes an app's Ed25519 key for signed pushes, writes it to
/// `DIR/signing-key.pem` (PKCS#8, mode 0600) and prints the public key phones pin. It never
/// overwrites a key: phones that pinned it would refuse every push signed with another.
struct SigningKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signing-key", abstract: "Make an Ed25519 key for signed pushes: DIR/signing-key.pem and its public key.")

    @Option(help: "Folder for signing-key.pem (created if missing).") var out: String

    func run() throws {
        let path = URL(fileURLWithPath: out).appendingPathComponent("signing-key.pem").path
        guard !FileManager.default.fileExists(atPath: path) else {
            throw CLIOutput.invalid(
                field: "out", message: "\(path) exists: phones that pinned its public key would refuse pushes signed with a new one; choose another folder")
        }
        do {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CLIOutput.invalid(field: "out", message: "cannot create \(out): \(error)")
        }
        let key = PushSigningKey()
        guard PrivateFile.create(path, contents: Data(key.pem.utf8)) else {
            throw CLIOutput.invalid(field: "out", message: "cannot write \(path)")
        }
        CLIOutput.printJSON(["private_key_path": path, "algorithm": "Ed25519", "public_key": key.publicKeyBase64URL])
    }
}
