// An end-to-end encrypted messenger's half of Herald, with no Kasia in it: what an app and its
// Notification Service Extension do with HeraldKit, as two commands a test runs against
// `herald serve` (docs/heraldkit.md, "Any end-to-end encrypted app").
//
//   messenger register --herald URL --token HEX --watch session:ID --state DIR
//       The app: keys for sealed pushes (made once, kept in DIR), the app's signing key pinned on
//       first registration (in DIR's App Group store), the device registered with its push_keys.
//   messenger open --state DIR < payload.json
//       The extension: the APNs payload opened with the device's keys and verified against the
//       pinned key; prints the document Herald signed, or why it was refused (exit 1).
import Foundation
import HeraldKit

@main
struct Messenger {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        func option(_ name: String) -> String? {
            arguments.firstIndex(of: "--" + name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
        }
        do {
            guard let state = option("state").map({ URL(fileURLWithPath: $0) }) else { throw Usage() }
            switch arguments.first {
            case "register":
                guard let herald = option("herald").flatMap(URL.init(string:)), let token = option("token"), let watch = option("watch") else {
                    throw Usage()
                }
                try await register(herald: herald, token: token, watch: watch, state: state)
            case "open":
                try open(state: state)
            default:
                throw Usage()
            }
        } catch {
            FileHandle.standardError.write(Data("messenger: \(error)\n".utf8))
            exit(1)
        }
    }

    struct NotRegistered: Error, CustomStringConvertible {
        var description: String { "no signing key pinned yet: register first" }
    }

    struct Usage: Error, CustomStringConvertible {
        var description: String { "usage: messenger register --herald URL --token HEX --watch KEY --state DIR | messenger open --state DIR" }
    }

    /// The device's keys for sealed pushes, made on first use and kept where the extension reads
    /// them (an app keeps them in the keychain or its App Group).
    static func keys(in state: URL) throws -> SealedPushKeys {
        let file = state.appendingPathComponent("push-keys.json")
        if let data = FileManager.default.contents(atPath: file.path),
            let saved = try JSONSerialization.jsonObject(with: data) as? [String: [UInt8]], let key = saved["private_key"], let auth = saved["auth"]
        {
            return try SealedPushKeys(privateKeyBytes: key, auth: auth)
        }
        let keys = SealedPushKeys()
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: ["private_key": keys.privateKeyBytes, "auth": keys.auth]).write(to: file)
        return keys
    }

    /// The App Group store the app and its extension share; the pinned signing key lives there.
    static func store(in state: URL) throws -> SharedStore {
        try SharedStore(directory: state.appendingPathComponent("app-group"))
    }

    /// The app, at each launch: register the token with what it watches and its sealing keys.
    static func register(herald: URL, token: String, watch: String, state: URL) async throws {
        var configuration = HeraldClient.Configuration(baseURL: herald)
        configuration.pushKeys = try keys(in: state)
        configuration.signingKeyPin = .trustOnFirstUse(try store(in: state))
        var watchSet = WatchSetBuilder()
        watchSet.addKey(watch)
        let client = HeraldClient(configuration: configuration)
        try await client.register(deviceToken: token, watchSet: try watchSet.build(), environment: .sandbox)
        let pinned = try SigningKeyPin.trustOnFirstUse(try store(in: state)).pinnedKey() ?? ""
        print(#"{"registered":true,"pinned_key":"\#(pinned)"}"#)
    }

    /// The extension: open and verify the push, or refuse it (the app then shows its generic text).
    static func open(state: URL) throws {
        let payload = FileHandle.standardInput.readDataToEndOfFile()
        guard let userInfo = try JSONSerialization.jsonObject(with: payload) as? [String: Any] else { throw Usage() }
        guard let pinned = try SigningKeyPin.trustOnFirstUse(try store(in: state)).pinnedKey() else {
            throw NotRegistered()
        }
        let document = try PushAuthenticator(pinnedKey: pinned, keys: try keys(in: state)).document(userInfo: userInfo)
        FileHandle.standardOutput.write(Data(document + [0x0A]))
    }
}
