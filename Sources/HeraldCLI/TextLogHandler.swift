import Logging

/// `HERALD_LOG_FORMAT=text`: swift-log's stream handler, with control characters in the message
/// and metadata escaped (`\n` → `\\n`), so text a peer chose — a push service's reason, a
/// client's header — cannot start a log line of its own; so are the line and paragraph separators
/// (U+2028, U+2029) and format characters (bidi overrides and isolates, zero-width characters),
/// which would break or reorder the line in a viewer.
struct TextLogHandler: LogHandler {
    private var stream: StreamLogHandler
    /// Kept here and handed to the stream only when a line is written: the stream formats its
    /// metadata into text on every change, and each request sets its `request_id` (a quarter of a
    /// request's logging cost went to formatting a line that, at `info`, is never written).
    private var ownMetadata = LoggerMetadataList()

    var metadata: Logger.Metadata {
        get { ownMetadata.dictionary }
        set { ownMetadata = LoggerMetadataList(newValue) }
    }

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
        get { ownMetadata[key] }
        set { ownMetadata[key] = newValue }
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

    /// Scalars a log line shows escaped: controls, separators of lines and paragraphs, and format
    /// characters (U+202E reverses what follows it on screen).
    static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .control, .lineSeparator, .paragraphSeparator, .format: true
        default: false
        }
    }

    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isHidden) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where isHidden(scalar): out += "\\u{\(String(scalar.value, radix: 16))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
