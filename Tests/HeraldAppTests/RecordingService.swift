import HeraldApp
import HeraldPushService
import HeraldCore
import HeraldDelivery
import HeraldStore
import Synchronization

/// A push service of the tests' own: `platform: "recorder"`, tokens `rec-` and 1 to 64 letters
/// or digits, pushes of at most 1,024 bytes, and a provider that keeps what it is asked to send. It plugs in as any fourth
/// service would: this file and one line in the registry.
struct RecordingService: PushService {
    /// What every app's provider was asked to send, by token.
    let sent = Recorded()

    var platform: Platform { Platform("recorder") }

    func token(_ text: String, kind: DeviceToken.Kind) throws(DeviceTokenError) -> DeviceToken {
        let name = text.dropFirst(4)
        guard kind == .token, text.hasPrefix("rec-"), (1...64).contains(name.count), name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) })
        else { throw .refused("a recorder token is rec- and 1 to 64 letters or digits") }
        return DeviceToken(checked: text, platform: platform, kind: kind)
    }

    /// Its own limit when an event is published: a recorder push carries at most 1,024 bytes.
    var publishLimits: (any PushLimits)? { Limits() }

    struct Limits: PushLimits {
        static let maximumPayload = 1_024
        func check(_ push: RenderedPush) throws(TemplateError) {
            guard push.payload.count <= Self.maximumPayload else {
                throw TemplateError(field: "fields", message: "is \(push.payload.count) bytes; a recorder push carries at most \(Self.maximumPayload)", isTooLarge: true)
            }
        }
    }

    var openAPITokenSchema: String? { #"{"type":"string","pattern":"^rec-[A-Za-z0-9]{1,64}$"}"# }

    func makeProvider(for app: PushServiceApp, context: PushServiceContext) throws -> any PushProvider {
        RecordingProvider(platform: platform, sent: sent)
    }

    final class Recorded: Sendable {
        private let payloads = Mutex<[String: [String]]>([:])
        func record(_ token: String, _ payload: [UInt8]) { payloads.withLock { $0[token, default: []].append(String(decoding: payload, as: UTF8.self)) } }
        func payloads(to token: String) -> [String] { payloads.withLock { $0[token] ?? [] } }
    }
}

struct RecordingProvider: PushProvider {
    let platform: Platform
    let sent: RecordingService.Recorded

    func send(_ delivery: ClaimedDelivery) async -> PushOutcome {
        sent.record(delivery.device.token, delivery.push.payload)
        return .delivered
    }
}
