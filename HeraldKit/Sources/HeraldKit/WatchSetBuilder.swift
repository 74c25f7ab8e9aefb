import KasiaProtocol

/// What a device asks Herald to watch: `watched_addresses`, its own `addresses`,
/// and per-contact `contextual_routes`.
public struct WatchSet: Hashable, Sendable {
    /// A contact's messages reach the device only under these aliases.
    public struct Route: Hashable, Sendable {
        public var peerAddress: String
        public var aliases: [String]
        public init(peerAddress: String, aliases: [String]) {
            self.peerAddress = peerAddress
            self.aliases = aliases
        }
    }

    public var watchedAddresses: [String]
    public var addresses: [String]
    public var contextualRoutes: [Route]

    public init(watchedAddresses: [String], addresses: [String] = [], contextualRoutes: [Route] = []) {
        self.watchedAddresses = watchedAddresses
        self.addresses = addresses
        self.contextualRoutes = contextualRoutes
    }
}

/// Builds a device's watch set from the wallet's address and its contacts: every address
/// validated (checksum included), duplicates merged, within Herald's default limits.
public struct WatchSetBuilder: Sendable {
    /// Herald's default limits: 1,000 watch keys per device, 100 aliases per route.
    public static let maximumWatchKeys = 1_000
    public static let maximumAliasesPerRoute = 100

    private var own: [String] = []
    private var contacts: [String] = []
    private var aliases: [String: [String]] = [:]
    private var otherKeys: [String] = []

    public init() {}

    /// The wallet's own address: payments and handshakes to it reach the device.
    public mutating func addOwnAddress(_ address: String) {
        own.append(address)
    }

    /// A contact: its messages reach the device — only under `aliases` when some are given
    /// (the aliases the contact writes to this conversation).
    public mutating func addContact(_ address: String, aliases: [String] = []) {
        contacts.append(address)
        if !aliases.isEmpty { self.aliases[address, default: []] += aliases }
    }

    /// Any other watch key (`session:…`, `conv:…`), passed through for Herald to check.
    public mutating func addKey(_ key: String) {
        otherKeys.append(key)
    }

    /// The watch set, or the first address or limit at fault.
    public func build() throws(HeraldClientError) -> WatchSet {
        func canonical(_ text: String, field: String) throws(HeraldClientError) -> String {
            do { return try KaspaAddress(text).string } catch { throw .invalidWatchKey(field: field, value: text, reason: error.description) }
        }
        var ownAddresses: [String] = []
        for (i, text) in own.enumerated() { ownAddresses.append(try canonical(text, field: "addresses[\(i)]")) }
        // The user's own addresses go into `addresses` only: watching them would push the user's
        // own outgoing messages back to them.
        let ownSet = Set(ownAddresses)
        var watched = Unique()
        var routes: [String: Unique] = [:]
        var routeOrder = Unique()
        for (i, text) in contacts.enumerated() {
            let address = try canonical(text, field: "contacts[\(i)]")
            if !ownSet.contains(address) { watched.insert(address) }
            for alias in aliases[text] ?? [] {
                routeOrder.insert(address)
                routes[address, default: Unique()].insert(alias)
            }
        }
        for key in otherKeys { watched.insert(key) }
        let ownUnique = Unique(ownAddresses).items
        guard watched.items.count + ownUnique.count <= Self.maximumWatchKeys else {
            throw .invalidWatchKey(
                field: "watched_addresses", value: "\(watched.items.count + ownUnique.count) keys", reason: "at most \(Self.maximumWatchKeys)")
        }
        let built = routeOrder.items.map { WatchSet.Route(peerAddress: $0, aliases: routes[$0]!.items) }
        if let crowded = built.first(where: { $0.aliases.count > Self.maximumAliasesPerRoute }) {
            throw .invalidWatchKey(field: "contextual_routes", value: crowded.peerAddress, reason: "at most \(Self.maximumAliasesPerRoute) aliases")
        }
        return WatchSet(watchedAddresses: watched.items, addresses: ownUnique, contextualRoutes: built)
    }

    /// Keeps the first occurrence of each string, in order.
    private struct Unique: Sendable {
        var items: [String] = []
        var seen: Set<String> = []
        init(_ items: [String] = []) { for item in items { insert(item) } }
        mutating func insert(_ item: String) { if seen.insert(item).inserted { items.append(item) } }
    }
}
