public import Foundation

/// The APNs environment this build's device tokens belong to: Apple issues a token for the
/// sandbox to a development build and for production to every other, and a token pushed on the
/// other environment's host is refused (`BadDeviceToken`). `HeraldClient.register` sends it by
/// default, so a debug build and an App Store build of one app both reach their devices.
public enum APNsBuildEnvironment: String, Hashable, Sendable, CaseIterable {
    /// Apple's production host: App Store, TestFlight and ad hoc builds.
    case production
    /// Apple's sandbox host: development builds and the Simulator.
    case sandbox

    /// `.production` or `.sandbox` for the running app: the `aps-environment` of its embedded
    /// provisioning profile (`development` is the sandbox); an App Store or TestFlight build
    /// carries no profile and is production, the Simulator is sandbox. Nil where no app bundle
    /// says (Linux, a command-line tool): Herald then uses the app's configured environment.
    public static var current: APNsBuildEnvironment? {
        #if targetEnvironment(simulator)
        return .sandbox
        #elseif os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        guard let url = Bundle.main.url(forResource: "embedded", withExtension: "mobileprovision") else { return .production }
        return (try? Data(contentsOf: url)).flatMap(environment(fromProfile:)) ?? .production
        #elseif os(macOS)
        let url = Bundle.main.bundleURL.appendingPathComponent("Contents/embedded.provisionprofile")
        guard let data = try? Data(contentsOf: url) else { return nil }
        return environment(fromProfile: data) ?? .production
        #else
        return nil
        #endif
    }

    /// The environment a provisioning profile grants: its `aps-environment` (macOS:
    /// `com.apple.developer.aps-environment`), as Herald names it; nil without one. The profile is
    /// a signed container around a property list, which is searched as text.
    public static func environment(fromProfile data: Data) -> APNsBuildEnvironment? {
        let text = String(decoding: data, as: UTF8.self)
        for key in ["<key>aps-environment</key>", "<key>com.apple.developer.aps-environment</key>"] {
            guard let keyRange = text.range(of: key),
                let open = text.range(of: "<string>", range: keyRange.upperBound..<text.endIndex),
                let close = text.range(of: "</string>", range: open.upperBound..<text.endIndex)
            else { continue }
            // Only whitespace between the key and its value.
            guard text[keyRange.upperBound..<open.lowerBound].allSatisfy(\.isWhitespace) else { continue }
            switch text[open.upperBound..<close.lowerBound] {
            case "development": return .sandbox
            case "production": return .production
            default: return nil
            }
        }
        return nil
    }
}
