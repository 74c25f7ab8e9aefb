/// The push services whose refusal of an app's VAPID key counts as evidence against the key
/// (`HERALD_WEBPUSH_TRUSTED_SERVICES`). A subscription's endpoint is whatever its registrant
/// names, so anyone can run an origin that takes an app's first push and refuses the next: such
/// a refusal is charged to its subscription and origin only, and the app's Web Push pauses only
/// when services the operator trusts (by default the browsers' own) refuse the key.
public struct TrustedPushServices: Sendable, Hashable {
    /// Hosts (`host` or `host:port`, lowercase), and domains written `*.example.com` (any host under it).
    public private(set) var hosts: Set<String>
    private var domains: [String]

    /// FCM's (Chrome, Edge on Android), Mozilla's (Firefox), Apple's (Safari) and Microsoft's (WNS) Web Push hosts.
    public static let browsers = TrustedPushServices([
        "fcm.googleapis.com", "android.googleapis.com", "updates.push.services.mozilla.com", "web.push.apple.com", "*.notify.windows.com",
    ])

    public init(_ entries: some Sequence<String>) {
        hosts = []
        domains = []
        for entry in entries.map({ $0.lowercased() }) {
            if entry.hasPrefix("*.") { domains.append(String(entry.dropFirst(1))) } else { hosts.insert(entry) }
        }
    }

    /// Adds a host (`host:port`): the built-in simulator stands in for the browsers' services.
    public mutating func insert(_ host: String) {
        hosts.insert(host.lowercased())
    }

    /// Whether `origin` (`https://host[:port]`) is one of them.
    public func trusts(origin: String) -> Bool {
        guard let authority = origin.split(separator: "://", maxSplits: 1).last.map({ $0.lowercased() }) else { return false }
        if hosts.contains(authority) { return true }
        let host = authority.split(separator: ":").first.map(String.init) ?? authority
        if hosts.contains(host) { return true }
        return domains.contains { host.hasSuffix($0) && host.count > $0.count }
    }
}
