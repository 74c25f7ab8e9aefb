import Logging

/// `HERALD_LOG_FORMAT=text`: swift-log's stream handler, with control characters in the message
/// and metadata escaped (`\n` → `\\n`), so text a peer chose — a push service's reason, a
/// client's header — cannot start a log line of its own.
struct TextLogHandler: LogHandler {
    private var stream: StreamLogHandler
    /// Kept here and handed to the stream only when a line is written: the stream formats its
    /// metadata into text on every change, and each request sets its `request_id` (a quarter of a
    /// request's logging cost went to formatting a line that, at `info`, is never written).
    var metadata: Logger.Metadata = [:]

    init(label: String, level: Logger.Level) {
        stream = StreamLogHandler.standardError(label: label)
        stream.logLevel = level
    }

    /// Lines to `output` instead of standard error.
    init(label: String, level: Logger.Level, output: any TextOutputStream & Sendable) {
        stream = StreamLogHandler(label: label, stream: output, metadataProvider: nil)
        stream.logLevel = level
    }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(Self.escaped(event.message.description))"
        let merged = metadata.merging(event.metadata ?? [:]) { _, explicit in explicit }
        event.metadata = merged.isEmpty ? nil : merged.mapValues(Self.escaped)
        stream.log(event: event)
    }

    static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(escaped(text))
        case .stringConvertible(let convertible): .string(escaped(convertible.description))
        case .array(let items): .array(items.map(escaped))
        case .dictionary(let dictionary): .dictionary(dictionary.mapValues(escaped))
        }
    }

    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.properties.generalCategory == .control: out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
