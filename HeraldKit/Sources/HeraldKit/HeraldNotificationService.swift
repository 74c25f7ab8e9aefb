public import Foundation
import KasiaCrypto
#if canImport(UserNotifications) && (os(iOS) || os(macOS) || os(visionOS))
import UserNotifications
#endif

/// What a Notification Service Extension does with one of Herald's pushes, in one call: checks it
/// (opened when sealed, its signature against the pinned key) when it has an authenticator,
/// resolves its title and body (a Kasia message decrypted, its sender checked against the
/// contacts), and stores what the app must see in the App Group's `SharedStore`. A push that
/// fails its checks shows `genericText` alone and stores nothing. The pieces it uses
/// (`PushAuthenticator`, `NotificationContentResolver`, `SharedStore`) stay public for an
/// extension that needs another order.
///
/// ```swift
/// final class NotificationService: UNNotificationServiceExtension {
///     override func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
///         guard let service = HeraldNotificationService.appGroup(container, curve: myCurve, keys: keys, privateKey: walletKey)
///         else { return contentHandler(request.content) }
///         service.handle(request, contentHandler: contentHandler)
///     }
/// }
/// ```
public struct HeraldNotificationService: Sendable {
    public let store: SharedStore
    public let resolver: NotificationContentResolver
    /// Checks each push before it is read; nil: see `requiresAuthentication`.
    public let authenticator: PushAuthenticator?
    /// Without an authenticator, whether every push is refused as unsigned (no key pinned yet:
    /// nothing is shown that could not be checked) or read as it comes (an app that neither
    /// seals nor pins, made with `init(store:resolver:authenticator:privateKey:)`).
    public let requiresAuthentication: Bool
    /// The wallet's key: opens a Kasia message's inline payload and checks what it pays.
    public let privateKey: KasiaPrivateKey?
    /// What a push that cannot be shown says.
    public var genericText = "New message"

    /// A service that checks pushes with `authenticator`, or reads them as they come without one.
    public init(store: SharedStore, resolver: NotificationContentResolver, authenticator: PushAuthenticator? = nil, privateKey: KasiaPrivateKey? = nil) {
        self.init(store: store, resolver: resolver, authenticator: authenticator, requiresAuthentication: false, privateKey: privateKey)
    }

    init(store: SharedStore, resolver: NotificationContentResolver, authenticator: PushAuthenticator?, requiresAuthentication: Bool, privateKey: KasiaPrivateKey?) {
        self.store = store
        self.resolver = resolver
        self.authenticator = authenticator
        self.requiresAuthentication = requiresAuthentication
        self.privateKey = privateKey
    }

    /// The service for an extension whose app shares `directory` (its App Group container) and
    /// links `curve`: every push is checked against `pinnedKey` — by default the key the app
    /// pinned in the store (`SigningKeyPin.trustOnFirstUse`) — and opened with `keys` when sealed.
    /// Until a key is pinned every push shows the generic text. Nil when the store cannot be
    /// opened, the curve cannot verify senders, or the pinned key is not a key.
    public static func appGroup(
        _ directory: URL, curve: any Secp256k1Curve & SchnorrVerifier, keys: SealedPushKeys? = nil, privateKey: KasiaPrivateKey? = nil,
        pinnedKey: String? = nil
    ) -> HeraldNotificationService? {
        guard let store = try? SharedStore(directory: directory),
            let resolver = try? NotificationContentResolver(cipher: KasiaCipher(curve: curve), verifier: curve)
        else { return nil }
        var authenticator: PushAuthenticator?
        if let pinned = pinnedKey ?? (try? store.contents().pinnedSigningKey) ?? nil {
            guard let made = try? PushAuthenticator(pinnedKey: pinned, keys: keys) else { return nil }
            authenticator = made
        }
        return HeraldNotificationService(store: store, resolver: resolver, authenticator: authenticator, requiresAuthentication: true, privateKey: privateKey)
    }

    /// An APNs push's `userInfo`: its title and body, what was stored, and why it was not shown
    /// when it failed a check.
    public func handle(userInfo: [AnyHashable: Any]) -> (outcome: NotificationOutcome, rejection: PushRejection?) {
        let outer = NotificationPresentation(aps: userInfo["aps"])
        if let authenticator { return checked(Result { () throws(PushRejection) in try authenticator.document(userInfo: userInfo) }, outer: outer) }
        return requiresAuthentication ? checked(.failure(.unsigned), outer: outer) : unchecked(HeraldPush(userInfo: userInfo), presentation: outer)
    }

    /// An FCM message's data map (Android), as `handle(userInfo:)`.
    public func handle(fcmData: [String: String]) -> (outcome: NotificationOutcome, rejection: PushRejection?) {
        if let authenticator { return checked(Result { () throws(PushRejection) in try authenticator.document(fcmData: fcmData) }, outer: nil) }
        // An unsealed FCM message says how it presents in `aps` (Apple's keys, as JSON).
        let presentation = NotificationPresentation(aps: fcmData["aps"].flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) })
        return requiresAuthentication ? checked(.failure(.unsigned), outer: presentation) : unchecked(HeraldPush(fcmData: fcmData), presentation: presentation)
    }

    /// A push read as it came, with the presentation it came with.
    private func unchecked(_ push: HeraldPush, presentation: NotificationPresentation) -> (outcome: NotificationOutcome, rejection: PushRejection?) {
        var outcome = resolver.resolve(push, contacts: contacts, privateKey: privateKey)
        outcome.presentation = presentation.resolved(with: outcome.presentation)
        return stored(outcome, rejection: nil)
    }

    /// A checked document's presentation is the document's; a push that failed keeps only what
    /// its outer `aps` says of how it rings (no thread).
    private func checked(_ document: Result<[UInt8], PushRejection>, outer: NotificationPresentation?) -> (outcome: NotificationOutcome, rejection: PushRejection?) {
        var (outcome, rejection) = resolver.resolve(verified: document, contacts: contacts, privateKey: privateKey, genericText: genericText)
        if rejection == nil, case .success(let bytes) = document {
            outcome.presentation = NotificationPresentation(document: bytes).resolved(with: outcome.presentation)
            outcome.dismissals = Dismissal.all(in: bytes)
        } else {
            outcome.presentation = outer?.withoutThread ?? NotificationPresentation()
        }
        return stored(outcome, rejection: rejection)
    }

    private var contacts: [Contact] { (try? store.contents().contacts) ?? [] }

    /// Keeps what the app must see; a store that cannot be written loses the record, not the notification.
    private func stored(_ outcome: NotificationOutcome, rejection: PushRejection?) -> (outcome: NotificationOutcome, rejection: PushRejection?) {
        if let record = outcome.record { try? store.record(record) }
        return (outcome, rejection)
    }

    #if canImport(UserNotifications) && (os(iOS) || os(macOS) || os(visionOS))
    /// `didReceive(_:withContentHandler:)` in one call: the request's content with Herald's title
    /// and body (what the push did not say is left as it came). Returns why a push was not shown,
    /// for the app's reliability tracker.
    @discardableResult
    public func handle(_ request: UNNotificationRequest, contentHandler: @escaping (UNNotificationContent) -> Void) -> PushRejection? {
        let (content, _, rejection) = content(for: request)
        contentHandler(content)
        return rejection
    }

    /// What `handle(_:contentHandler:)` shows, with the outcome it came from: for an extension that
    /// adds to it (a communication notification from `outcome.presentation.sender`) before handing it on.
    /// The conversation's id is left in `userInfo` for `NotificationActionRouter`.
    public func content(for request: UNNotificationRequest) -> (content: UNNotificationContent, outcome: NotificationOutcome, rejection: PushRejection?) {
        let (outcome, rejection) = handle(userInfo: request.content.userInfo)
        guard let content = request.content.mutableCopy() as? UNMutableNotificationContent else {
            return (request.content, outcome, rejection)
        }
        if !outcome.title.isEmpty { content.title = outcome.title }
        if !outcome.body.isEmpty { content.body = outcome.body }
        let presentation = outcome.presentation
        content.threadIdentifier = presentation.threadIdentifier ?? ""
        if let conversation = presentation.conversation {
            var userInfo = content.userInfo
            userInfo[NotificationConversation.userInfoKey] = conversation.id
            content.userInfo = userInfo
        }
        if let category = presentation.category { content.categoryIdentifier = category }
        if let sound = presentation.sound { content.sound = sound == "default" ? .default : UNNotificationSound(named: UNNotificationSoundName(sound)) }
        if let badge = presentation.badge { content.badge = NSNumber(value: badge) }
        if #available(iOS 15.0, macOS 12.0, *) {
            if let score = presentation.relevanceScore { content.relevanceScore = score }
            switch presentation.interruptionLevel {
            case "passive": content.interruptionLevel = .passive
            case "active": content.interruptionLevel = .active
            case "time-sensitive": content.interruptionLevel = .timeSensitive
            case "critical": content.interruptionLevel = .critical
            default: break
            }
        }
        return (content, outcome, rejection)
    }
    #endif
}
