import HeraldCore
import HeraldPushCore
public import HeraldStore

/// `herald devices import`: native registration bodies (`POST /v1/push/register`'s), one JSON
/// object per line, checked as the API checks them, then written in batches. Every line is
/// checked before the first is written: a bad line (named by its number) leaves the store as it
/// was. The operator's import proves what a device's own request would (the database's
/// credentials are its proof): no bearer key, JWT or wallet signature is asked for; every field,
/// limit and the app's `max_devices` hold as for the API.
public struct DeviceImport: Sendable {
    /// A line's body as the registrar takes it, and the app it names.
    public typealias Decode = @Sendable (_ line: [UInt8]) throws(Refusal) -> (app: String?, request: DeviceRegistrar.Request)

    public let registrar: DeviceRegistrar
    public let decode: Decode
    /// The longest line: the API's body limit (`HERALD_MAX_BODY_BYTES`).
    public let maximumLineBytes: Int
    /// Lines written per transaction.
    public static let batch = 10_000

    public init(registrar: DeviceRegistrar, maximumLineBytes: Int = 65_536, decode: @escaping Decode) {
        self.registrar = registrar
        self.maximumLineBytes = maximumLineBytes
        self.decode = decode
    }

    /// A line refused: its number (the first line is 1) and why.
    public struct LineRefused: Error, Sendable {
        public var line: Int
        public var refusal: Refusal
    }

    /// Devices by app.
    public typealias Counts = [String: Int]

    /// Checks every line (`(number, bytes)`, blank lines left out by the reader); nothing is written.
    /// - Returns: the lines per app.
    public func check(_ lines: some Sequence<(Int, [UInt8])>) async throws -> Counts {
        var counts: Counts = [:]
        var known: [String: Int] = [:]
        var new: [String: Set<String>] = [:]
        try await inBatches(lines) { batch in
            for (number, registration, registered) in batch {
                let app = registration.app
                counts[app, default: 0] += 1
                // An app's device limit holds for the file as a whole, as it does for the API.
                guard let maximum = registrar.apps[app]?.maximumDevices, !registered else { continue }
                if known[app] == nil { known[app] = try await registrar.store.deviceCount(app: app) }
                new[app, default: []].insert(registration.token.value)
                if (known[app] ?? 0) + (new[app]?.count ?? 0) > maximum {
                    throw LineRefused(line: number, refusal: Refusal(
                        .forbidden, code: "device_limit", message: "app \(app) has its maximum of \(maximum) devices", field: "device_token"))
                }
            }
        }
        return counts
    }

    /// Writes every line, `batch` per transaction (a registration is an upsert: a run broken
    /// off is finished by running it again); call it after `check` passed.
    /// - Returns: the devices written.
    public func write(_ lines: some Sequence<(Int, [UInt8])>) async throws -> Int {
        var written = 0
        try await inBatches(lines) { batch in
            written += try await registrar.store.register(batch.map(\.registration), now: registrar.clock.now()).count
        }
        return written
    }

    /// The lines checked `batch` at a time: the devices a batch's tokens already have are read in
    /// one query per app, not one per line (a round trip each on PostgreSQL).
    private func inBatches(
        _ lines: some Sequence<(Int, [UInt8])>, _ body: ([(line: Int, registration: Registration, registered: Bool)]) async throws -> Void
    ) async throws {
        var decoded: [(line: Int, app: String, request: DeviceRegistrar.Request)] = []
        func flush() async throws {
            var registered: [String: [String: DeviceRecord]] = [:]
            for (app, entries) in Dictionary(grouping: decoded, by: \.app) {
                let tokens = Set(entries.compactMap { $0.request.deviceToken.map(DeviceToken.lookupForm) })
                registered[app] = Dictionary(try await registrar.store.devices(app: app, tokens: Array(tokens)).map { ($0.token, $0) }) { a, _ in a }
            }
            var batch: [(line: Int, registration: Registration, registered: Bool)] = []
            batch.reserveCapacity(decoded.count)
            for (number, app, request) in decoded {
                do {
                    let (registration, known) = try await registrar.checked(
                        request, app: app, grant: .anyIdentity, provingOwnership: false, registered: .given(registered[app] ?? [:]))
                    batch.append((number, registration, known))
                } catch let refusal as Refusal {
                    throw LineRefused(line: number, refusal: refusal)
                }
            }
            decoded.removeAll(keepingCapacity: true)
            try await body(batch)
        }
        for (number, bytes) in lines {
            do {
                guard bytes.count <= maximumLineBytes else {
                    throw Refusal(.tooLarge, code: "body_too_large", message: "a line is limited to \(maximumLineBytes) bytes, as the API's body", field: "body")
                }
                let (appName, request) = try decode(bytes)
                decoded.append((number, try registrar.apps.resolve(appName).id, request))
            } catch let refusal as Refusal {
                throw LineRefused(line: number, refusal: refusal)
            }
            if decoded.count == Self.batch { try await flush() }
        }
        if !decoded.isEmpty { try await flush() }
    }
}
