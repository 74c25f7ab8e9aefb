import ArgumentParser
import Crypto
import Foundation
import HeraldAPNsCore
import HeraldCore
import HeraldDelivery
import HeraldPushCore
import PushSigning

/// `herald-bench sealing`: Herald's CPU per push for signing and sealing alone (`PushSealing`, as
/// each lane runs it before its provider), in this process, on a Kasia message push of about
/// 700 bytes (with the sound and category Kasia's pushes carry), over 1,000 devices. Signed only, and sealed to the device's kept key: one event per
/// push (a signature per push), and one event fanned out in batches of 100 (a signature per batch);
/// with a key made for every push (an ECDH per push, as RFC 8291 makes it: a lifetime of 0); and
/// the key a registration makes (`PushSealing.registered`), per registration, the memory a
/// kept key takes, and what reading a sealed alert's presentation (every key set) costs a push.
/// Bounded: `--pushes` per case (default 20,000), at most 60 s each.
struct SealingBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "sealing")
    @Option(help: "Pushes per case.") var pushes = 20_000

    func run() async throws {
        guard (100...1_000_000).contains(pushes) else { throw ValidationError("--pushes is 100 to 1000000") }
        let sealing = PushSealing(signingKey: PushSigningKey())
        let inline = String(repeating: "ab", count: 120)
        let push = RenderedPush(
            pushType: .alert, priority: .immediate, collapseID: nil,
            payload: Array(#"{"aps":{"alert":{"title":"New Message","body":"From kaspa:qp...70xmfj"},"mutable-content":1,"content-available":1,"sound":"default","category":"kasia.message","thread-id":"kaspa:qpw8n7cnqcsmrvzkps6ue0pzqgmlyf2uay2t0kxvhq2wy6mq8sfz770xmfj"},"kasia":{"type":"contextual_message","txId":"\#(String(repeating: "5f", count: 32))","sender":"kaspa:qpw8n7cnqcsmrvzkps6ue0pzqgmlyf2uay2t0kxvhq2wy6mq8sfz770xmfj","payload":"\#(inline)","timestamp":1704067200,"daaScore":12345678}}"#.utf8))
        let devices = 1_000
        let sealedDevices = try (0..<devices).map { _ in try Rig.sealedAttributes() }
        let plain = DeviceAttributes(production: false)
        var perPush = sealing
        perPush.sessions = SealingSessions(lifetime: 0)
        let issuedAt = Int64(Date().timeIntervalSince1970)

        /// CPU microseconds per push of `body(i)` over `pushes` pushes (or what 60 s allowed).
        func measure(_ body: (Int, inout SignedDocuments) -> RenderedPush) throws -> Double {
            let start = try Rig.cpuSeconds(of: "self")
            let clock = ContinuousClock.now
            var done = 0
            var signatures = SignedDocuments()
            var bytes = 0
            while done < pushes, ContinuousClock.now - clock < .seconds(60) {
                if done % 100 == 0 { signatures = SignedDocuments() }
                bytes &+= body(done, &signatures).payload.count
                done += 1
            }
            precondition(bytes > 0)
            return ((try Rig.cpuSeconds(of: "self") - start) * 1e6 / Double(done) * 10).rounded() / 10
        }
        let signedSingle = try measure { i, _ in
            var fresh = SignedDocuments()
            return sealing.prepare(push, for: plain, issuedAt: issuedAt + Int64(i), limit: 4_096, signatures: &fresh)
        }
        let signedFanOut = try measure { _, signatures in sealing.prepare(push, for: plain, issuedAt: issuedAt, limit: 4_096, signatures: &signatures) }
        let sealedFirst = try measure { i, signatures in
            perPush.prepare(push, for: sealedDevices[i % devices], issuedAt: issuedAt, limit: 4_096, signatures: &signatures)
        }
        // What each device's registration pays: its key (the ECDH), which its pushes then use.
        // Ten rounds: /proc counts CPU in 10 ms ticks.
        let now = Date()
        let registrationStart = try Rig.cpuSeconds(of: "self")
        for _ in 0..<10 { for device in sealedDevices { sealing.registered(device, now: now) } }
        let registration = ((try Rig.cpuSeconds(of: "self") - registrationStart) * 1e6 / Double(10 * devices) * 10).rounded() / 10
        let sealedKept = try measure { i, signatures in
            sealing.prepare(push, for: sealedDevices[i % devices], issuedAt: issuedAt, limit: 4_096, signatures: &signatures, now: now)
        }
        let sealedSingle = try measure { i, _ in
            var fresh = SignedDocuments()
            return sealing.prepare(push, for: sealedDevices[i % devices], issuedAt: issuedAt + Int64(i), limit: 4_096, signatures: &fresh, now: now)
        }
        // What a sealed alert's presentation (its outer sound, category, …) costs a push: the
        // reading of the document's aps, alone, once per push as a single event pays it (a
        // fan-out reads it once a batch), over 10x the pushes (/proc counts CPU in 10 ms ticks).
        let full = RenderedPush(pushType: .alert, priority: .immediate, collapseID: nil, payload: Array(String(decoding: push.payload, as: UTF8.self)
            .replacing(#""sound":"default","category":"kasia.message","#, with: #""sound":"default","category":"kasia.message","interruption-level":"time-sensitive","relevance-score":0.5,"badge":12,"#).utf8))
        precondition(full.payload.count > push.payload.count)
        let presentationStart = try Rig.cpuSeconds(of: "self")
        var members = 0
        for _ in 0..<(10 * pushes) {
            var fresh = SignedDocuments(remembering: false)
            members &+= fresh.presentation(of: full).count
        }
        precondition(members > 0)
        let presentation = ((try Rig.cpuSeconds(of: "self") - presentationStart) * 1e6 / Double(10 * pushes) * 100).rounded() / 100
        // The memory a kept key takes: 20,000 more devices' keys.
        let kept = 20_000
        let keys = try (0..<kept).map { _ in try Rig.sealedAttributes() }
        let sessions = SealingSessions()
        let before = try Rig.memory(of: "self").rss
        // A copy of each stored form, as a device read from the store brings one: the table keeps it.
        for device in keys { sessions.agree(for: DeviceAttributes(storedForm: String(decoding: Array(device.storedForm.utf8), as: UTF8.self)), now: now) }
        let bytesPerKey = (try Rig.memory(of: "self").rss - before) * 1_024 / kept
        report([
            "bytes_per_kept_key": bytesPerKey,
            "benchmark": "sealing", "pushes": pushes, "document_bytes": push.payload.count,
            "cpu_us_per_push_signed_one_event_each": signedSingle, "cpu_us_per_push_signed_fan_out": signedFanOut,
            "cpu_us_per_push_sealed_fan_out": sealedKept, "cpu_us_per_push_sealed_fan_out_key_per_push": sealedFirst,
            "cpu_us_per_registration_sealing_key": registration,
            "cpu_us_per_push_sealed_one_event_each": sealedSingle,
            "cpu_us_per_push_sealed_presentation": presentation,
        ])
    }
}
