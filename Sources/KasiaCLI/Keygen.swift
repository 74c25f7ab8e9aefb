import ArgumentParser
import KasiaCrypto
import KasiaProtocol

struct Keygen: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make a wallet key and its Kaspa address, for trying Herald's Kasia routes: one JSON line.",
        discussion: "The key is printed in full: it is for trying things, not for holding funds.")

    enum Network: String, ExpressibleByArgument, CaseIterable {
        case mainnet, testnet, simnet, devnet

        var prefix: KaspaAddress.Prefix {
            switch self {
            case .mainnet: .mainnet
            case .testnet: .testnet
            case .simnet: .simnet
            case .devnet: .devnet
            }
        }
    }

    @Option(help: "The address's network: mainnet (kaspa:), testnet, simnet or devnet.")
    var network: Network = .mainnet

    @Flag(help: "Print KASIA_PRIVATE_KEY=… and KASIA_ADDRESS=… for a shell's eval instead of JSON.")
    var shell = false

    struct Output: Encodable {
        var private_key: String
        var address: String
    }

    func run() throws {
        let cipher = KasiaCipher()
        do {
            let key = try cipher.randomPrivateKey()
            let address = try cipher.address(of: key, prefix: network.prefix)
            if shell {
                print("KASIA_PRIVATE_KEY=\(Hex.encode(key.bytes))\nKASIA_ADDRESS=\(address)")
            } else {
                print(Decode.line(Output(private_key: Hex.encode(key.bytes), address: "\(address)")))
            }
        } catch {
            fail(1, "no key: \(error)")
        }
    }
}
