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

struct Encrypt: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Seal a text to an address and print the transaction payload, hex.")

    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case message, handshake, payment
    }

    @Option(help: "The recipient's Kaspa address (Schnorr, version 0).")
    var to: String

    @Option(help: "The plaintext (for handshakes and payments, Kasia's JSON).")
    var text: String

    @Option(help: "message (ciph_msg:1:comm:), handshake or payment.")
    var type: Kind = .message

    @Option(help: "The conversation alias for a message: 12 lowercase hex characters.")
    var alias: String = "000000000000"

    func run() throws {
        let address: KaspaAddress
        do { address = try KaspaAddress(to) } catch { fail(2, "--to: \(error)") }
        guard type != .message || (alias.count == 12 && Hex.decode(alias) != nil && alias == alias.lowercased()) else {
            fail(2, "--alias: 12 lowercase hex characters")
        }
        let sealed: [UInt8]
        do { sealed = try KasiaCipher().encrypt(text, to: address) } catch { fail(2, "--to: \(error)") }
        let payload: [UInt8] =
            switch type {
            case .message: KasiaPayload.contextualMessagePayload(alias: alias, sealed: sealed)
            case .handshake: KasiaPayload.handshakePayload(sealed: sealed)
            case .payment: KasiaPayload.paymentPayload(sealed: sealed)
            }
        print(Hex.encode(payload))
    }
}

/// Prints `{"error": …}` to stderr and exits.
func fail(_ status: Int32, _ message: String) -> Never {
    let line = Array((Decode.line(["error": message]) + "\n").utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(status)
}
