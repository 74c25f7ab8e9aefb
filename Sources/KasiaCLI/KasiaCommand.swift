import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import KasiaCrypto
import KasiaProtocol

/// `kasia`: look inside Kasia payloads when debugging pushes.
@main
struct KasiaCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kasia",
        abstract: "Decode and encrypt Kasia transaction payloads, and make a key to try them with.",
        subcommands: [Decode.self, Encrypt.self, Keygen.self])
}

struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print one JSON line: type, alias, sealed length, and the plaintext when --private-key opens it.",
        discussion: "Exit status: 0 decoded (and opened, with a key); 1 the key does not open it; 2 not a Kasia payload.")

    @Option(help: "The transaction payload, hex (as pushes and node JSON carry it).")
    var payload: String

    @Option(name: .customLong("private-key"), help: "The recipient's 32-byte secret key, hex.")
    var privateKey: String?

    struct Output: Encodable {
        var type: String
        var alias: String?
        var scope: String?
        var channel: String?
        var sealed_length: Int?
        var plaintext: String?
        var error: String?
    }

    func run() throws {
        guard let parsed = KasiaPayload(hex: payload) else {
            fail(2, "not a Kasia payload (hex starting with ciph_msg:)")
        }
        var output = Output(type: Self.typeName(parsed), sealed_length: parsed.sealed?.count)
        switch parsed {
        case .contextualMessage(let alias, _): output.alias = alias
        case .selfStash(let scope, _): output.scope = scope
        case .broadcast(let channel, let text):
            output.channel = channel
            output.plaintext = text
        default: break
        }
        var status: Int32 = 0
        if let privateKey {
            do {
                let key = try KasiaPrivateKey(hex: privateKey)
                guard let sealed = parsed.sealed else { throw KasiaCipherError.malformedBox }
                output.plaintext = try KasiaCipher().decrypt(sealed, with: key)
            } catch {
                output.error = String(describing: error)
                status = 1
            }
        }
        print(Self.line(output))
        if status != 0 { throw ExitCode(status) }
    }

    static func typeName(_ payload: KasiaPayload) -> String {
        switch payload {
        case .handshake: "handshake"
        case .legacy: "legacy"
        case .contextualMessage: "contextual_message"
        case .payment(_, .payment): "payment"
        case .payment(_, .pay): "payment_pay"
        case .selfStash: "self_stash"
        case .broadcast: "broadcast"
        }
    }

    static func line(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data("{}".utf8), as: UTF8.self)
    }
}

