import Foundation
public import HeraldPushCore

/// How an alert presents on the device, as an event's top-level fields give it: Apple's `aps`
/// keys `sound`, `category`, `interruption-level`, `relevance-score` and `badge`. None of them
/// names a person or a conversation, so a sealed push carries them outside the seal too.
public struct PushPresentation: Hashable, Sendable {
    /// How much an alert may interrupt (`interruption_level`).
    public enum InterruptionLevel: String, Hashable, Sendable, CaseIterable {
        case passive, active
        case timeSensitive = "time-sensitive"
        /// Needs Apple's entitlement: only for an app whose configuration allows it.
        case critical
    }

    /// A sound's name, or nil; `none` (as given) takes a template's sound away.
    public var sound: String?
    /// The notification category whose actions the device shows.
    public var category: String?
    public var interruptionLevel: InterruptionLevel?
    /// 0 to 1: which of an app's notifications the summary puts first.
    public var relevanceScore: Double?
    /// The app icon's badge, 0 to 99,999.
    public var badge: Int?

    public init(
        sound: String? = nil, category: String? = nil, interruptionLevel: InterruptionLevel? = nil, relevanceScore: Double? = nil, badge: Int? = nil
    ) {
        self.sound = sound
        self.category = category
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.badge = badge
    }

    public var isEmpty: Bool { sound == nil && category == nil && interruptionLevel == nil && relevanceScore == nil && badge == nil }

    /// These values with `other`'s where it sets them (an event's over its app's defaults).
    public func overridden(by other: PushPresentation) -> PushPresentation {
        PushPresentation(
            sound: other.sound ?? sound, category: other.category ?? category, interruptionLevel: other.interruptionLevel ?? interruptionLevel,
            relevanceScore: other.relevanceScore ?? relevanceScore, badge: other.badge ?? badge)
    }

    /// The event fields, in the order a refusal names the first one set.
    public var givenFields: [String] {
        [("sound", sound != nil), ("category", category != nil), ("interruption_level", interruptionLevel != nil),
         ("relevance_score", relevanceScore != nil), ("badge", badge != nil)].filter(\.1).map(\.0)
    }

    /// The longest sound name and category.
    public static let maximumNameLength = 64
    public static let maximumBadge = 99_999

    /// Reads a publisher's fields, each checked.
    /// - Parameter allowsCritical: whether the app's configuration allows critical alerts.
    /// - Throws: `TemplateError` naming the field (`sound`, `category`, `interruption_level`,
    ///   `relevance_score`, `badge`).
    public static func read(
        sound: String?, category: String?, interruptionLevel: String?, relevanceScore: Double?, badge: Int64?, allowsCritical: Bool
    ) throws(TemplateError) -> PushPresentation {
        var presentation = PushPresentation()
        if let sound {
            guard !sound.isEmpty, sound.unicodeScalars.count <= maximumNameLength, sound.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
                throw TemplateError(field: "sound", message: "sound is a sound's name of 1 to \(maximumNameLength) characters, or none")
            }
            presentation.sound = sound
        }
        if let category {
            guard !category.isEmpty, category.utf8.count <= maximumNameLength, category.utf8.allSatisfy(Self.isCategoryByte) else {
                throw TemplateError(field: "category", message: "category is 1 to \(maximumNameLength) of A-Z, a-z, 0-9, '.', '_' and '-'")
            }
            presentation.category = category
        }
        if let interruptionLevel {
            guard let level = InterruptionLevel(rawValue: interruptionLevel) else {
                throw TemplateError(field: "interruption_level", message: "interruption_level is passive, active or time-sensitive (critical where the app allows it)")
            }
            guard level != .critical || allowsCritical else {
                throw TemplateError(field: "interruption_level", message: "critical alerts need Apple's entitlement; this app's configuration does not allow them")
            }
            presentation.interruptionLevel = level
        }
        if let relevanceScore {
            guard relevanceScore.isFinite, (0...1).contains(relevanceScore) else {
                throw TemplateError(field: "relevance_score", message: "relevance_score is a number from 0 to 1")
            }
            presentation.relevanceScore = relevanceScore
        }
        if let badge {
            guard (0...Int64(maximumBadge)).contains(badge) else {
                throw TemplateError(field: "badge", message: "badge is a whole number from 0 to \(maximumBadge)")
            }
            presentation.badge = Int(badge)
        }
        return presentation
    }

    private static func isCategoryByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "-")
    }

    /// Apple's `aps` keys it sets, in order.
    public static let apsKeys = ["sound", "category", "interruption-level", "relevance-score", "badge"]

    /// `aps` with these keys set (a key the template gave keeps its place; `sound: none` removes it).
    public func applied(to aps: [JSONValue.Field]) -> [JSONValue.Field] {
        var aps = aps
        func set(_ key: String, _ value: JSONValue?) {
            guard let value else { return }
            if let at = aps.firstIndex(where: { $0.key == key }) {
                aps = aps.enumerated().filter { $0.offset <= at || $0.element.key != key }.map(\.element)
                if value == .null { aps.remove(at: at) } else { aps[at] = .init(key, value) }
            } else if value != .null {
                aps.append(.init(key, value))
            }
        }
        set("sound", sound.map { $0 == "none" ? .null : .string($0) })
        set("category", category.map(JSONValue.string))
        set("interruption-level", interruptionLevel.map { .string($0.rawValue) })
        set("relevance-score", relevanceScore.map(JSONValue.double))
        set("badge", badge.map { .int(Int64($0)) })
        return aps
    }

    /// What an alert's `aps` says of its presentation (a sealed push carries it outside the seal).
    public init(aps: [JSONValue.Field]) {
        self.init()
        for field in aps {
            switch (field.key, field.value) {
            case ("sound", .string(let name)): sound = name
            case ("category", .string(let name)): category = name
            case ("interruption-level", .string(let level)): interruptionLevel = InterruptionLevel(rawValue: level)
            case ("relevance-score", .double(let score)): relevanceScore = score
            case ("relevance-score", .int(let score)): relevanceScore = Double(score)
            case ("badge", .int(let count)) where (0...Int64(Self.maximumBadge)).contains(count): badge = Int(count)
            default: continue
            }
        }
    }

    /// A document's presentation as the `aps` members a sealed alert carries (`,"sound":"default",…`),
    /// read from its bytes without parsing the rest (`PresentationScanner`): what `init(aps:)`
    /// would take, in `apsKeys`' order.
    public static func apsMembers(of document: [UInt8]) -> [UInt8] {
        PresentationScanner.apsMembers(of: document)
    }

}
