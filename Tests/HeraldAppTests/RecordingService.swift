import Foundation
import HeraldApp
import HeraldCore
import HeraldDelivery
import HeraldPushCore
import HeraldPushService
import HeraldSimulatorSupport
import HeraldStore
import NIOPosix
import Synchronization

/// A push service of the tests' own: `platform: "recorder"`, tokens `rec-` and 1 to 64 letters
/// or digits, pushes of at most 1,024 bytes. It plugs in as any fourth service would: this file
/// and one line in the registry. Through the typed seam it has what the built-in three have:
/// - settings: an app's `HERALD_RECORDER_LABEL` (or `recorder: {label: …}` in `HERALD_CONFIG`),
///   whose pushes are kept in `sent`, tagged with the label;
/// - a built-in simulator for the apps without a label, with a control API on the admin listener
///   (`/simulators/recorder/notifications?token=`);
/// - shared state: one line its providers share (`herald_provider_connections_open{provider="recorder"}`).
struct RecordingService: PushService {
    typealias AppServiceSettings = RecorderSettings
    typealias Shared = RecorderLine
    typealias Simulated = RecorderSimulator

    /// What apps with settings were asked to send, by token.
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

    var settingsBlock: PushServiceSettingsBlock? { PushServiceSettingsBlock(key: "recorder", variables: ["label": "HERALD_RECORDER_LABEL"]) }

    func appSettings(from variables: [String: String], source: PushServiceSettingsSource) throws -> RecorderSettings? {
        guard let label = variables["HERALD_RECORDER_LABEL"] else { return nil }
        guard (1...16).contains(label.count), label.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            throw HeraldConfigurationError(field: "HERALD_RECORDER_LABEL", message: "is 1 to 16 letters")
        }
        return RecorderSettings(label: label)
    }

    func makeShared(
        for apps: [PushServiceApp<RecorderSettings>], instanceSettings: Void, simulated: RecorderSimulator?, eventLoopGroup: MultiThreadedEventLoopGroup
    ) throws -> RecorderLine {
        RecorderLine()
    }

    func connectionsOpen(_ providers: [any PushProvider], shared: RecorderLine) -> Int { shared.open }

    func makeProvider(for app: PushServiceApp<RecorderSettings>, context: PushServiceContext<Self>) throws -> any PushProvider {
        if let settings = app.serviceSettings { return RecordingProvider(platform: platform, sent: sent, label: settings.label) }
        guard let simulator = context.simulated else { throw HeraldConfigurationError(field: "HERALD_RECORDER_LABEL", message: "no simulator for \(app.id)") }
        return RecordingProvider(platform: platform, sent: simulator.received, label: nil)
    }

    func startSimulator(for apps: [PushServiceApp<RecorderSettings>], eventLoopGroup: MultiThreadedEventLoopGroup) async throws -> RunningSimulator<RecorderSimulator>? {
        let apps = apps.filter { $0.serviceSettings == nil }
        guard !apps.isEmpty else { return nil }
        let simulator = RecorderSimulator()
        return RunningSimulator(
            BuiltInSimulator(
                name: "recorder", address: "in process", warning: "No HERALD_RECORDER_LABEL: recorder pushes go to the built-in recorder simulator",
                apps: apps.map(\.id), readinessName: "built-in recorder simulator", isListening: { true }, control: simulator.control, stop: {}),
            handle: simulator)
    }

    final class Recorded: Sendable {
        private let payloads = Mutex<[String: [String]]>([:])
        func record(_ token: String, _ payload: String) { payloads.withLock { $0[token, default: []].append(payload) } }
        func payloads(to token: String) -> [String] { payloads.withLock { $0[token] ?? [] } }
    }
}

/// An app's recorder settings: its label.
struct RecorderSettings: Sendable {
    let label: String
}

/// What every app's recorder provider shares: one line.
struct RecorderLine: Sendable {
    let open = 1
}

/// The recorder's built-in look-alike: what it received, and a control API that shows it.
final class RecorderSimulator: Sendable {
    let received = RecordingService.Recorded()

    @Sendable func control(_ call: SimulatorControlCall) async -> SimulatorControlAnswer {
        guard call.method == "GET", call.path == "/notifications", let token = call.query["token"] else { return .error(404, "no such route") }
        let data = (try? JSONSerialization.data(withJSONObject: ["notifications": received.payloads(to: token)])) ?? Data()
        return SimulatorControlAnswer(status: 200, json: String(decoding: data, as: UTF8.self))
    }
}

struct RecordingProvider: PushProvider {
    let platform: Platform
    let sent: RecordingService.Recorded
    /// The app's label, tagged on each recording; nil at the simulator.
    let label: String?

    func send(_ delivery: ClaimedDelivery) async -> PushOutcome {
        let payload = String(decoding: delivery.push.payload, as: UTF8.self)
        sent.record(delivery.device.token, label.map { $0 + " " + payload } ?? payload)
        return .delivered
    }
}
