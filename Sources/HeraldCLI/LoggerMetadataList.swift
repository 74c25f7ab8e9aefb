import Logging

/// A log handler's own metadata as a short list, in the order it was set. Every request sets one
/// or two keys on a copy of its logger (`hb.request.id`, `request_id`): in a dictionary that is a
/// copy of the storage, a resize and the keys hashed again, some 3,000 instructions a key; here
/// it is one array copy. A logger holds a handful of keys, so a lookup walks them.
struct LoggerMetadataList {
    private var entries: [(key: String, value: Logger.Metadata.Value)] = []

    init() {}

    init(_ metadata: Logger.Metadata) {
        entries = metadata.map { (key: $0.key, value: $0.value) }
    }

    subscript(key: String) -> Logger.Metadata.Value? {
        get { entries.first { $0.key == key }?.value }
        set {
            let index = entries.firstIndex { $0.key == key }
            switch (index, newValue) {
            case (let index?, let value?): entries[index].value = value
            case (let index?, nil): entries.remove(at: index)
            case (nil, let value?): entries.append((key: key, value: value))
            case (nil, nil): break
            }
        }
    }

    /// The keys and values as swift-log's dictionary.
    var dictionary: Logger.Metadata {
        Dictionary(entries.lazy.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last })
    }
}
