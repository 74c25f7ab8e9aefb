import Foundation

/// Where a Matrix `app_id` goes: a Herald app, the push service of its pushers, and how its
/// pushkeys and payloads are read (Sygnal's per-app settings, in Herald's terms).
public struct MatrixApp: Sendable, Hashable {
    /// The push service a Matrix app's pushkeys belong to (a `matrix` entry's `type`): a
    /// `MatrixPusher` of that kind reads them.
    public struct Kind: RawRepresentable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The pushkey is an APNs token, base64 (Sygnal's default) or hex.
        public static let apns = Kind(rawValue: "apns")
        /// The pushkey is an FCM registration token.
        public static let fcm = Kind(rawValue: "fcm")
        /// The pushkey is a subscription's p256dh; `data.endpoint` and `data.auth` complete it.
        public static let webpush = Kind(rawValue: "webpush")
    }

    /// The `app_id` as configured: exact, or a glob (`*`, `?`).
    public var pattern: String
    /// The Herald app whose credentials push, whose metrics and devices these are.
    public var app: String
    public var kind: Kind
    /// APNs: the pushkey is base64 and turned into hex (Sygnal's `convert_device_token_to_hex`).
    public var convertTokenToHex: Bool
    /// Web Push: globs an endpoint's host must match (none: any host the SSRF guard allows).
    public var allowedEndpoints: [String]?
    /// Send an encrypted room's sender, room name and content too (default: ids and counts only).
    public var encryptedRoomDetails: Bool

    public init(
        pattern: String, app: String, kind: Kind, convertTokenToHex: Bool = true, allowedEndpoints: [String]? = nil,
        encryptedRoomDetails: Bool = false
    ) {
        self.pattern = pattern
        self.app = app
        self.kind = kind
        self.convertTokenToHex = convertTokenToHex
        self.allowedEndpoints = allowedEndpoints
        self.encryptedRoomDetails = encryptedRoomDetails
    }

    /// Whether an endpoint's host is one `allowedEndpoints` names.
    public func allows(host: String) -> Bool {
        guard let allowedEndpoints else { return true }
        return allowedEndpoints.contains { Glob.matches($0, host.lowercased()) }
    }
}

/// The configured Matrix apps: an `app_id` matches its exact entry first, else the first glob
/// that matches it in configuration order (as Sygnal does); and the pusher of each kind.
public struct MatrixApps: Sendable {
    public let apps: [MatrixApp]
    private let exact: [String: MatrixApp]
    private let globs: [MatrixApp]
    private let pushers: [MatrixApp.Kind: any MatrixPusher]

    public init(_ apps: [MatrixApp], pushers: [any MatrixPusher] = BuiltInMatrixPusher.all) {
        self.apps = apps
        self.pushers = Dictionary(pushers.map { ($0.kind, $0) }) { first, _ in first }
        var exact: [String: MatrixApp] = [:]
        var globs: [MatrixApp] = []
        for app in apps {
            if Glob.isPattern(app.pattern) { globs.append(app) } else if exact[app.pattern] == nil { exact[app.pattern] = app }
        }
        self.exact = exact
        self.globs = globs
    }

    /// The app an `app_id` belongs to, or nil (its pushkey is rejected).
    public func app(for appID: String) -> MatrixApp? {
        exact[appID] ?? globs.first { Glob.matches($0.pattern, appID) }
    }

    public var isEmpty: Bool { apps.isEmpty }

    /// The pusher that reads `app`'s pushkeys and builds its pushes; nil when none is of its kind.
    public func pusher(for app: MatrixApp) -> (any MatrixPusher)? { pushers[app.kind] }
}

/// Shell-style globs: `*` any run of characters, `?` any one; everything else itself.
public enum Glob {
    public static func isPattern(_ pattern: String) -> Bool { pattern.contains("*") || pattern.contains("?") }

    /// Whether `text` matches `pattern` whole (iterative, with one backtrack point: linear in practice).
    public static func matches(_ pattern: String, _ text: String) -> Bool {
        let p = Array(pattern.unicodeScalars), t = Array(text.unicodeScalars)
        var (pi, ti) = (0, 0)
        var star: (p: Int, t: Int)?
        while ti < t.count {
            if pi < p.count, p[pi] == "?" || (p[pi] != "*" && p[pi] == t[ti]) {
                pi += 1
                ti += 1
            } else if pi < p.count, p[pi] == "*" {
                star = (pi, ti)
                pi += 1
            } else if let s = star {
                pi = s.p + 1
                ti = s.t + 1
                star = (s.p, s.t + 1)
            } else {
                return false
            }
        }
        while pi < p.count, p[pi] == "*" { pi += 1 }
        return pi == p.count
    }
}
