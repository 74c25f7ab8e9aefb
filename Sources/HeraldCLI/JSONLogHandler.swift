import Foundation
import HeraldCore
import HeraldPushCore
import Logging
import Synchronization

/// `HERALD_LOG_FORMAT=json`: one JSON object per line on standard error, for a log shipper —
/// `time` (UTC, milliseconds), `level`, `label`, `message`, `source`, and `metadata` (the
/// logger's, then its provider's, then the call's; a later one wins a key).
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    private var ownMetadata = LoggerMetadataList()
    var metadataProvider: Logger.MetadataProvider?
    private let output: JSONLogOutput

    init(label: String, level: Logger.Level, output: JSONLogOutput, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.logLevel = level
        self.output = output
        self.metadataProvider = metadataProvider
    }

    var metadata: Logger.Metadata {
        get { ownMetadata.dictionary }
        set { ownMetadata = LoggerMetadataList(newValue) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { ownMetadata[key] }
        set { ownMetadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let given = event.metadata { merged.merge(given) { _, new in new } }
        var fields: [JSONValue.Field] = [
            .init("time", .string(Date().formatted(Self.timeFormat))),
            .init("level", .string(event.level.rawValue)),
            .init("label", .string(label)),
            .init("message", .string(event.message.description)),
            .init("source", .string(event.source)),
        ]
        if let error = event.error { fields.append(.init("error", .string("\(error)"))) }
        if !merged.isEmpty { fields.append(.init("metadata", Self.json(merged))) }
        output.write(JSONValue.object(fields).encoded)
    }

    private static let timeFormat = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// Metadata as JSON, keys sorted so lines diff and grep alike.
    static func json(_ metadata: Logger.Metadata) -> JSONValue {
        .object(metadata.sorted { $0.key < $1.key }.map { .init($0.key, json($0.value)) })
    }

    static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let items): .array(items.map(json))
        case .dictionary(let dictionary): json(dictionary)
        }
    }
}

/// Standard error, one whole line per write, so lines from different threads never interleave.
final class JSONLogOutput: Sendable {
    private let lock = Mutex(())

    func write(_ line: [UInt8]) {
        lock.withLock { _ in
            var bytes = line
            bytes.append(UInt8(ascii: "\n"))
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Foundation.write(STDERR_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                    if written <= 0 { return }
                    offset += written
                }
            }
        }
    }
}
