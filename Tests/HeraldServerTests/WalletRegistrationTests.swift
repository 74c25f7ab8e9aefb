import Crypto
import Foundation
import HeraldCore
import HeraldDelivery
import HeraldServer
import HeraldStore
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import KasiaProtocol
import Testing

/// The `wallet` policy: a device's own Kaspa addresses need the wallet's signature over the
/// device token, made with the official Kaspa Python SDK's `sign_message` here.
@Suite("Wallet-signed own addresses", .serialized)
struct WalletRegistrationTests {
    /// The SDK signs `message` with the key `privateKeyHex`; returns its address and the signature.
    static func sdkSign(_ message: String, privateKeyHex: String) throws -> (address: String, signature: String) {
        let script = """
            import json, os, sys, kaspa
            key = kaspa.PrivateKey(sys.argv[1])
            print(json.dumps({"address": key.to_address("mainnet").to_string(), "signature": kaspa.sign_message(sys.argv[2], key)}), flush=True)
            os._exit(0)  # past the SDK's native teardown, which has aborted on a loaded machine
            """
        let output = try runProcess(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", script, privateKeyHex, message])
        #expect(output.status == 0, "\(String(decoding: output.stderr, as: UTF8.self))")
        let json = output.lastJSONLine
        return (json["address"] as? String ?? "", json["signature"] as? String ?? "")
    }

    static func message(token: String, timestamp: Int64) -> String {
        "herald-register:default:\(Hex.encode(SHA256.hash(data: Array(token.utf8)))):\(timestamp)"
    }

    static func register(_ token: String, own: String) -> String {
        #"{"device_token":"\#(token)","platform":"ios","watched_addresses":["session:s"],"addresses":[\#(own)]}"#
    }

    @Test("an own address is accepted with its wallet's fresh signature over this token, and refused otherwise (403 naming it)")
    func proofs() async throws {
        let token = String(repeating: "ab", count: 32), otherToken = String(repeating: "cd", count: 32)
        let now = Int64(Date().timeIntervalSince1970)
        let alice = try Self.sdkSign(Self.message(token: token, timestamp: now), privateKeyHex: String(repeating: "22", count: 32))
        let mallory = try Self.sdkSign(Self.message(token: token, timestamp: now), privateKeyHex: String(repeating: "33", count: 32))
        let stale = try Self.sdkSign(Self.message(token: token, timestamp: now - 660), privateKeyHex: String(repeating: "22", count: 32))
        let forOtherToken = try Self.sdkSign(Self.message(token: otherToken, timestamp: now), privateKeyHex: String(repeating: "22", count: 32))
        @Sendable func entry(_ address: String, _ signature: String, _ timestamp: Int64) -> String {
            #"{"address":"\#(address)","timestamp":\#(timestamp),"signature":"\#(signature)"}"#
        }
        let refused = [
            ("no proof", #""\#(alice.address)""#),
            ("another wallet's signature", entry(alice.address, mallory.signature, now)),
            ("an 11-minute-old signature", entry(alice.address, stale.signature, now - 660)),
            ("a signature over another token", entry(alice.address, forOtherToken.signature, now)),
            ("a timestamp other than the signed one", entry(alice.address, alice.signature, now + 1)),
            ("a timestamp at the extremes", entry(alice.address, alice.signature, Int64.max)),
        ]
        try await withRegistrationServer(configure: {
            $0.apps = .single(AppSettings(id: "default", publishKeys: ["publisher-key-00001"], registration: .wallet))
        }) { client, store in
            for (name, own) in refused {
                let r = try await send(client, .post, "/v1/push/register", Self.register(token, own: own))
                #expect(r.status == .forbidden, "\(name)")
                #expect((try json(r)["error"] as? [String: Any])?["field"] as? String == "addresses[0]", "\(name)")
            }
            #expect(try await store.stats().devices.isEmpty)
            let r = try await send(client, .post, "/v1/push/register", Self.register(token, own: entry(alice.address, alice.signature, now)))
            #expect(r.status == .ok, "\(String(buffer: r.body))")
            // Other people's addresses (watched) need no proof.
            let watched = try await send(client, .post, "/v1/push/register",
                #"{"device_token":"\#(otherToken)","platform":"ios","watched_addresses":["\#(mallory.address)"]}"#)
            #expect(watched.status == .ok)
            // ...but watching brings none of that address's payments: they reach only the device
            // that proved it holds the key.
            func pay(_ recipient: String) async throws -> Int? {
                let body = #"{"template":"kasia.payment","fields":{"tx_id":"\#(String(repeating: "0f", count: 32))","sender":"\#(alice.address)","recipient":"\#(recipient)","timestamp":1700000000,"daa_score":1,"amount":150000000}}"#
                let r = try await send(client, .post, "/v1/events", body, headers: [.contentType: "application/json", .authorization: "Bearer publisher-key-00001"])
                return try json(r)["deliveries"] as? Int
            }
            #expect(try await pay(mallory.address) == 0)
            #expect(try await pay(alice.address) == 1)
        }
    }
}
