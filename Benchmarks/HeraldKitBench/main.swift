// `heraldkit-bench`: HeraldKit's hot paths in a notification extension (README → Performance).
//
//   heraldkit-bench [--seconds 3]
//
// Prints one JSON line: Kasia decrypts/s of a 200-byte message, whole extension runs/s
// (decode the push JSON, open the inline payload, build title/body and the record), and Kasia
// sender proofs checked/s (Kaspa's signature hash of a one-input, two-output transaction with
// that message as its payload, then its Schnorr signature), and sealed pushes opened per second
// (that push sealed and signed as Herald sends it to a device with push_keys: base64url, RFC 8291
// decryption, the envelope read, its Ed25519 signature and issue time checked), and sealed Kasia
// pushes shown per second (that, with the sender's proof inside: Herald's signature, the sender's
// signature over the transaction, the message decrypted, title and body built).
// Bounded: each loop stops after `--seconds` or 1,000,000 iterations.
import Crypto
import Foundation
import HeraldKit
import PushSigning
import WebPushCrypto

let seconds = CommandLine.arguments.firstIndex(of: "--seconds").flatMap { Double(CommandLine.arguments[$0 + 1]) } ?? 3
let cipher = KasiaCipher()
let key = try cipher.randomPrivateKey()
let address = try cipher.address(of: key)
let message = String(repeating: "a", count: 200)
let sealed = try cipher.encrypt(message, to: address)
let sender = try cipher.address(of: cipher.randomPrivateKey()).string
let payload = Hex.encode(KasiaPayload.contextualMessagePayload(alias: "a1b2c3d4e5f6", sealed: sealed))
let pushJSON = Data(
    #"{"aps":{"alert":{"title":"New Message","body":"From x"},"mutable-content":1,"content-available":1},"kasia":{"type":"contextual_message","txId":"\#(String(repeating: "ab", count: 32))","sender":"\#(sender)","payload":"\#(payload)","timestamp":1750000000,"daaScore":1}}"#.utf8)
let contacts = [Contact(address: sender, name: "Alice")]
let resolver = try NotificationContentResolver(cipher: cipher)

/// Runs `body` until the time or count bound; operations per second.
func measure(_ body: () throws -> Bool) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    var count = 0
    var elapsed: Double = 0
    while count < 1_000_000 {
        guard try body() else { fatalError("the benchmark's operation failed") }
        count += 1
        if count % 256 == 0 {
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            if elapsed >= seconds { break }
        }
    }
    elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    return Double(count) / elapsed
}

let decrypts = try measure { try cipher.decrypt(sealed, with: key) == message }
let extensionRuns = try measure {
    let outcome = resolver.resolve(try HeraldPush(json: pushJSON), contacts: contacts, privateKey: key)
    return outcome.body == message
}
// A transaction from `sender`'s key carrying the sealed message, signed as a wallet signs it.
let curve = LibSecp256k1()
let senderKey = try cipher.randomPrivateKey()
let senderAddress = try cipher.address(of: senderKey)
let p2pk = [0x20] + senderAddress.payload + [0xAC]
var proof = KaspaTransactionProof(
    version: 0, inputs: [.init(transactionID: [UInt8](repeating: 0x11, count: 32), index: 0, sequence: 0, sigOpCount: 1, signatureScript: [])],
    outputs: [.init(value: 20_000_000, scriptVersion: 0, script: [0x20] + address.payload + [0xAC]), .init(value: 979_990_000, scriptVersion: 0, script: p2pk)],
    lockTime: 0, subnetworkID: [UInt8](repeating: 0, count: 20), gas: 0,
    payload: KasiaPayload.contextualMessagePayload(alias: "a1b2c3d4e5f6", sealed: sealed), spent: .init(value: 1_000_000_000, scriptVersion: 0, script: p2pk))
let signature = try curve.signSchnorr(message32: proof.signatureHash(), privateKey: senderKey.bytes, auxiliaryRandom: nil)
proof.inputs[0].signatureScript = HexBytes([0x41] + signature + [KaspaTransactionProof.sigHashAll])
let proofs = measure {
    (try? proof.verify(sender: senderAddress, verifier: curve)) != nil
}
// The same push, sealed and signed as Herald sends it to a device that registered push_keys.
let deviceKeys = SealedPushKeys()
let signingKey = Curve25519.Signing.PrivateKey()
let issued = Int64(Date().timeIntervalSince1970)
let envelope = SignedPush(signing: Array(pushJSON), issuedAt: issued, with: signingKey).envelope
let receiver = deviceKeys.privateKey.publicKey
let sealedPush: [AnyHashable: Any] = [
    "aps": ["alert": ["body": "New message"], "mutable-content": 1],
    "herald_sealed": Base64URLText.encode(try WebPushEncryption.encrypt(envelope, to: receiver, receiverBytes: Array(receiver.x963Representation), auth: deviceKeys.auth)),
]
let authenticator = try PushAuthenticator(pinnedKey: Base64URLText.encode(Array(signingKey.publicKey.rawRepresentation)), keys: deviceKeys)
let sealedOpens = measure { (try? authenticator.document(userInfo: sealedPush)) == Array(pushJSON) }
// The sealed Kasia push as Herald sends it with the sender's proof, all the extension does: open,
// check Herald's signature, check the sender's, decrypt the message, build what is shown.
var shipped = proof
shipped.payload = HexBytes([])
let proofJSON = String(decoding: try JSONEncoder().encode(shipped), as: UTF8.self)
let provenJSON = Array(
    #"{"aps":{"alert":{"title":"New Message","body":"From x"},"mutable-content":1,"content-available":1},"kasia":{"type":"contextual_message","txId":"\#(String(repeating: "ab", count: 32))","sender":"\#(senderAddress.string)","payload":"\#(Hex.encode(proof.payload.bytes))","timestamp":1750000000,"daaScore":1,"proof":\#(proofJSON)}}"#.utf8)
let provenPush: [AnyHashable: Any] = [
    "aps": ["alert": ["body": "New message"], "mutable-content": 1],
    "herald_sealed": Base64URLText.encode(try WebPushEncryption.encrypt(
        SignedPush(signing: provenJSON, issuedAt: issued, with: signingKey).envelope, to: receiver, receiverBytes: Array(receiver.x963Representation),
        auth: deviceKeys.auth)),
]
let senderContacts = [Contact(address: senderAddress.string, name: "Alice")]
let provenShown = measure {
    let (outcome, rejection) = resolver.resolve(
        verified: Result { try authenticator.document(userInfo: provenPush) }.mapError { $0 as! PushRejection }, contacts: senderContacts,
        privateKey: key)
    return rejection == nil && outcome.senderProven && outcome.body == message
}
print(#"{"decrypts_per_second":\#(Int(decrypts)),"extension_runs_per_second":\#(Int(extensionRuns)),"sender_proofs_per_second":\#(Int(proofs)),"sealed_pushes_opened_per_second":\#(Int(sealedOpens)),"sealed_kasia_pushes_shown_per_second":\#(Int(provenShown)),"message_bytes":200}"#)
