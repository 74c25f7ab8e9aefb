import Foundation
import HeraldCore
public import HeraldDelivery
import HeraldMatrix
import HeraldPushCore
import HeraldPushService
import HeraldServer
import Yams

/// `HERALD_CONFIG`: the YAML file for several apps in one instance. Every key is
/// checked: a file that does not parse, an unknown key or an unreadable `.p8` is refused with
/// the file and the field named.
///
/// ```yaml
/// http_port: 8080                      # optional: http_host, http_port, admin_host, admin_port, database_url, stale_after_days, retention_hours
/// limits: {watch_keys: 1000, aliases: 100, body_bytes: 65536, batch_body_bytes: 8388608}   # optional
/// apps:
///   - id: kasia
///     apns: {key_path: AuthKey_ABC.p8, key_id: ABC1234567, team_id: TEAM123456, topic: com.kasia.app, environment: production}
///     vapid: {private_key_path: vapid-private.pem, subject: "mailto:ops@kasia.example"}   # Web Push
///     publish_keys: [kasia-backend-key]
///     registration: {policy: open}      # or {policy: bearer, keys: [...]}
/// matrix:                               # optional: the Matrix push gateway's app_ids
///   - {app_id: im.example.ios, app: kasia, type: apns}        # exact, or a glob; exact wins, else the first glob
///   - {app_id: "im.example.android*", app: kasia, type: fcm}
///   - {app_id: im.example.web, app: kasia, type: webpush, allowed_endpoints: ["*.push.example.org"]}
/// ```
public struct ConfigFile: Sendable {
    /// One app: who may use it, and each push service's block of it, read as the variables its
    /// keys stand for (none: the service's built-in simulator).
    public struct App: Sendable {
        public var settings: AppSettings
        var serviceVariables: [Platform: [String: String]] = [:]

        init(settings: AppSettings) {
            self.settings = settings
        }
    }

    var apps: [App] = []
    /// Each push service with its settings of the apps read.
    var services: [any ConfiguredPushService] = []
    var httpHost: String?
    var httpPort: Int?
    var adminHost: String?
    var adminPort: Int?
    var databaseURL: String?
    var staleAfterDays: Int?
    var retentionHours: Int?
    /// `limits:`: the API's limits (each optional).
    var limits = Limits()
    /// `matrix:`: the Matrix `app_id`s the push gateway serves, in order.
    var matrix: [MatrixApp] = []

    /// The API's configurable limits, from the file or the environment.
    struct Limits {
        var watchKeys: Int?
        var aliases: Int?
        var bodyBytes: Int?
        var batchBodyBytes: Int?

        /// The values each limit accepts.
        static let watchKeysRange = 1...100_000, aliasesRange = 1...10_000
        static let bodyRange = 1_024...16_777_216, batchBodyRange = 1_024...67_108_864
    }

    static let topKeys: Set<String> = ["apps", "http_host", "http_port", "admin_host", "admin_port", "database_url", "stale_after_days", "retention_hours", "limits", "matrix"]
    static let matrixKeys: Set<String> = ["app_id", "app", "type", "convert_device_token_to_hex", "allowed_endpoints", "encrypted_room_details"]
    static let limitKeys: Set<String> = ["watch_keys", "aliases", "body_bytes", "batch_body_bytes"]
    /// The shortest publisher or registration key accepted.
    static let minimumKeyLength = 16
    /// An app's own keys; each push service adds its block's (`apns`, `fcm`, `vapid`).
    static let appKeys: Set<String> = ["id", "publish_keys", "registration", "agent_event", "ghosttalk", "max_devices", "privacy", "signing_key_path", "sealed", "sealed_alert", "sealed_alerts", "sealing_key_lifetime_seconds", "sealing_cache_mib", "matrix_reaches_registered_devices", "critical_alerts", "presentation", "sealed_alert_key"]
    /// An app's `presentation:` (its defaults) and each template's block in it.
    static let presentationKeys: Set<String> = ["sound", "category", "interruption_level", "relevance_score", "badge"]
    static let agentEventKeys: Set<String> = ["stop", "permission_prompt", "idle_prompt", "other", "other_without_message"]
    static let textKeys: Set<String> = ["title", "body"]
    static let registrationKeys: Set<String> = ["policy", "keys", "hs256_secret", "es256_public_key_path"]
    /// Reads and checks the file at `path`, with `pushServices`' blocks in each app (their
    /// instance settings from `environment`).
    static func load(path: String, pushServices: PushServiceRegistry, environment: [String: String]) throws -> ConfigFile {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw HeraldConfigurationError(field: "HERALD_CONFIG", message: "\(path) is not a readable file")
        }
        let root: Any?
        do {
            root = try Yams.load(yaml: text)
        } catch {
            throw HeraldConfigurationError(field: "HERALD_CONFIG", message: "\(path) is not valid YAML: \(error)")
        }
        let reader = Reader(path: path)
        let top = try reader.map(root, at: "", keys: topKeys)
        var file = ConfigFile()
        file.httpHost = try reader.string(top["http_host"], at: "http_host")
        file.adminHost = try reader.string(top["admin_host"], at: "admin_host")
        file.httpPort = try reader.int(top["http_port"], at: "http_port", in: 0...65_535)
        file.adminPort = try reader.int(top["admin_port"], at: "admin_port", in: 0...65_535)
        file.databaseURL = try reader.string(top["database_url"], at: "database_url")
        file.staleAfterDays = try reader.int(top["stale_after_days"], at: "stale_after_days", in: 1...36_500)
        file.retentionHours = try reader.int(top["retention_hours"], at: "retention_hours", in: 0...87_600)
        if let limits = top["limits"] {
            let l = try reader.map(limits, at: "limits", keys: limitKeys)
            file.limits.watchKeys = try reader.int(l["watch_keys"], at: "limits.watch_keys", in: Limits.watchKeysRange)
            file.limits.aliases = try reader.int(l["aliases"], at: "limits.aliases", in: Limits.aliasesRange)
            file.limits.bodyBytes = try reader.int(l["body_bytes"], at: "limits.body_bytes", in: Limits.bodyRange)
            file.limits.batchBodyBytes = try reader.int(l["batch_body_bytes"], at: "limits.batch_body_bytes", in: Limits.batchBodyRange)
        }
        guard let apps = top["apps"] as? [Any], !apps.isEmpty else {
            throw reader.error(at: "apps", "is a list of one or more apps")
        }
        var seen = Set<String>()
        let keys = appKeys.union(pushServices.services.compactMap(\.settingsBlock).map(\.key))
        for (i, value) in apps.enumerated() {
            let entry = try reader.app(value, at: "apps[\(i)]", keys: keys, pushServices: pushServices)
            guard seen.insert(entry.settings.id).inserted else { throw reader.error(at: "apps[\(i)].id", "\(entry.settings.id) is used by an earlier app") }
            file.apps.append(entry)
        }
        var settings = file.apps.map(\.settings)
        file.services = try pushServices.configure(apps: &settings, environment: environment, source: .file) { index, service in
            file.apps[index].serviceVariables[service.platform]
        } refusal: { index, service, failure in
            reader.refusal(failure, at: "apps[\(index)]", block: service.settingsBlock)
        }
        for index in settings.indices { file.apps[index].settings = settings[index] }
        if let value = top["matrix"] {
            guard let entries = value as? [Any] else { throw reader.error(at: "matrix", "is a list of Matrix apps") }
            for (i, entry) in entries.enumerated() {
                file.matrix.append(try reader.matrixApp(entry, at: "matrix[\(i)]", apps: seen, pushers: pushServices.matrixPushers))
            }
        }
        return file
    }

    /// Walks the parsed YAML, naming the file and the field in every error.
    struct Reader {
        var path: String

        func error(at field: String, _ message: String) -> HeraldConfigurationError {
            HeraldConfigurationError(field: field, message: "\(path): \(field) \(message)")
        }

        func map(_ value: Any?, at field: String, keys: Set<String>) throws -> [String: Any] {
            guard let map = value as? [String: Any] else {
                throw error(at: field.isEmpty ? "(top level)" : field, "is a mapping")
            }
            for key in map.keys.sorted() where !keys.contains(key) {
                let name = field.isEmpty ? key : field + "." + key
                throw error(at: name, "is not a known key (known: \(keys.sorted().joined(separator: ", ")))")
            }
            return map
        }

        func string(_ value: Any?, at field: String) throws -> String? {
            guard let value else { return nil }
            // YAML reads an all-digit id (a team id) as a number; it is still the text that was written.
            if let number = value as? Int { return String(number) }
            guard let text = value as? String else { throw error(at: field, "is a string") }
            return text
        }

        func strings(_ value: Any?, at field: String) throws -> [String] {
            guard let value else { return [] }
            guard let list = value as? [Any] else { throw error(at: field, "is a list of strings") }
            return try list.enumerated().map { i, item in
                guard let text = item as? String, !text.isEmpty else { throw error(at: "\(field)[\(i)]", "is a non-empty string") }
                return text
            }
        }

        /// Bearer keys: each at least `ConfigFile.minimumKeyLength` characters, so none can be guessed.
        func secrets(_ value: Any?, at field: String) throws -> [String] {
            let keys = try strings(value, at: field)
            if let i = keys.firstIndex(where: { $0.count < ConfigFile.minimumKeyLength }) {
                throw error(at: "\(field)[\(i)]", "a key is at least \(ConfigFile.minimumKeyLength) characters")
            }
            return keys
        }

        func int(_ value: Any?, at field: String, in range: ClosedRange<Int>) throws -> Int? {
            guard let value else { return nil }
            guard let number = value as? Int, range.contains(number) else {
                throw error(at: field, "is a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return number
        }

        /// An app's `presentation:`: its own values and a `templates:` block of each template's,
        /// each checked as an event's fields are (a refusal names the key).
        func presentationDefaults(_ value: Any, at field: String, allowsCritical: Bool) throws -> PresentationDefaults {
            func read(_ value: Any, at field: String, keys: Set<String>) throws -> PushPresentation {
                let block = try map(value, at: field, keys: keys)
                var score: Double?
                if let given = block["relevance_score"] {
                    guard let number = (given as? Double) ?? (given as? Int).map(Double.init) else {
                        throw error(at: field + ".relevance_score", "is a number from 0 to 1")
                    }
                    score = number
                }
                var badge: Int64?
                if let given = block["badge"] {
                    guard let number = given as? Int else { throw error(at: field + ".badge", "is a whole number from 0 to 99999") }
                    badge = Int64(number)
                }
                let sound = try string(block["sound"], at: field + ".sound"), category = try string(block["category"], at: field + ".category")
                let level = try string(block["interruption_level"], at: field + ".interruption_level")
                do throws(TemplateError) {
                    return try PushPresentation.read(
                        sound: sound, category: category, interruptionLevel: level, relevanceScore: score, badge: badge, allowsCritical: allowsCritical)
                } catch let refusal {
                    // Its message names the field first ("sound is …"): the path names it here.
                    throw error(at: field + "." + refusal.field, String(refusal.message.trimmingPrefix(refusal.field + " ")))
                }
            }
            var defaults = PresentationDefaults(app: try read(value, at: field, keys: ConfigFile.presentationKeys.union(["templates"])))
            if let templates = (value as? [String: Any])?["templates"] {
                let blocks = try map(templates, at: field + ".templates", keys: SealingSettings.alertTemplates)
                for (template, block) in blocks {
                    defaults.templates[template] = try read(block, at: field + ".templates." + template, keys: ConfigFile.presentationKeys)
                }
            }
            return defaults
        }

        /// One app: its id, keys, policy and texts, and each push service's block.
        func app(_ value: Any, at: String, keys: Set<String>, pushServices: PushServiceRegistry) throws -> App {
            let app = try map(value, at: at, keys: keys)
            guard let id = try string(app["id"], at: at + ".id"), !id.isEmpty, id.utf8.count <= 64 else {
                throw error(at: at + ".id", "is required: 1 to 64 characters")
            }
            var settings = AppSettings(id: id, publishKeys: Set(try secrets(app["publish_keys"], at: at + ".publish_keys")))
            if let registration = app["registration"] {
                settings.registration = try registrationPolicy(registration, at: at + ".registration")
            }
            settings.maximumDevices = try int(app["max_devices"], at: at + ".max_devices", in: 1...100_000_000)
            if let text = try string(app["privacy"], at: at + ".privacy") {
                guard let privacy = PushPrivacy(rawValue: text) else { throw error(at: at + ".privacy", "is standard or minimal") }
                settings.privacy = privacy
            }
            // The app's keys read as the variables they stand for; a refusal names the key.
            var sealingVariables: [String: String] = [:]
            var sealingKeys: [String: String] = [:]
            for (key, variable) in SealingSettings.fileKeys {
                sealingKeys[variable] = key
                sealingVariables[variable] = try string(app[key], at: at + "." + key)
            }
            do {
                settings.sealing = try SealingSettings.read({ sealingVariables[$0] }, field: { at + "." + (sealingKeys[$0] ?? $0) })
            } catch let failure as HeraldConfigurationError {
                throw error(at: failure.field, failure.message)
            }
            if let value = app["sealed_alerts"] {
                let alerts = try map(value, at: at + ".sealed_alerts", keys: SealingSettings.alertTemplates)
                for (template, value) in alerts.sorted(by: { $0.key < $1.key }) {
                    let field = at + ".sealed_alerts." + template
                    let alert: SealedAlert
                    if let text = value as? String {
                        guard SealingSettings.isAlertText(text) else { throw error(at: field, "is 1 to 200 characters, no control characters") }
                        alert = SealedAlert(text: text)
                    } else {
                        let entry = try map(value, at: field, keys: ["text", "key"])
                        guard let text = try string(entry["text"], at: field + ".text"), SealingSettings.isAlertText(text) else {
                            throw error(at: field + ".text", "is required: 1 to 200 characters, no control characters")
                        }
                        let key = try string(entry["key"], at: field + ".key")
                        if let key, !SealingSettings.isAlertText(key) { throw error(at: field + ".key", "is 1 to 200 characters, no control characters") }
                        alert = SealedAlert(text: text, key: key)
                    }
                    settings.sealing?.templateAlerts[template] = alert
                }
            }
            if let value = app["critical_alerts"] {
                guard let flag = value as? Bool else { throw error(at: at + ".critical_alerts", "is true or false") }
                settings.allowsCriticalAlerts = flag
            }
            if let value = app["presentation"] {
                settings.presentation = try presentationDefaults(value, at: at + ".presentation", allowsCritical: settings.allowsCriticalAlerts)
            }
            if let value = app["agent_event"] {
                settings.agentEventTexts = try agentEventTexts(value, at: at + ".agent_event")
            }
            if let value = app["matrix_reaches_registered_devices"] {
                guard let flag = value as? Bool else { throw error(at: at + ".matrix_reaches_registered_devices", "is true or false") }
                settings.matrixReachesRegisteredDevices = flag
            }
            if let value = app["ghosttalk"] {
                let ghost = try map(value, at: at + ".ghosttalk", keys: ["send_enabled"])
                if let enabled = ghost["send_enabled"] {
                    guard let flag = enabled as? Bool else { throw error(at: at + ".ghosttalk.send_enabled", "is true or false") }
                    settings.ghostTalkSendEnabled = flag
                }
            }
            var entry = App(settings: settings)
            for service in pushServices.services {
                guard let block = service.settingsBlock, let value = app[block.key] else { continue }
                entry.serviceVariables[service.platform] = try variables(value, at: at + "." + block.key, block: block)
            }
            return entry
        }

        /// An app's `registration` block: open (the default), bearer with its keys, signed with its
        /// signing keys, or wallet.
        func registrationPolicy(_ value: Any, at field: String) throws -> RegistrationPolicy {
            let r = try map(value, at: field, keys: ConfigFile.registrationKeys)
            let keys = try secrets(r["keys"], at: field + ".keys")
            let secret = try string(r["hs256_secret"], at: field + ".hs256_secret")
            let publicKey = try string(r["es256_public_key_path"], at: field + ".es256_public_key_path")
            let policy = try string(r["policy"], at: field + ".policy")
            if policy != "signed", secret != nil || publicKey != nil {
                throw error(at: field + ".policy", "signing keys need policy: signed")
            }
            if ["open", "signed", "wallet", nil].contains(policy), !keys.isEmpty { throw error(at: field + ".keys", "only with policy: bearer") }
            switch policy {
            case "open", nil:
                return .open
            case "bearer":
                guard !keys.isEmpty else { throw error(at: field + ".keys", "policy bearer needs one or more keys") }
                return .bearer(Set(keys))
            case "signed":
                return .signed(try RegistrationSigning.keys(
                    secret: secret, publicKeyPath: publicKey, secretField: field + ".hs256_secret",
                    publicKeyField: field + ".es256_public_key_path", policyField: field + ".policy",
                    error: { field, message in error(at: field, message) }))
            case "wallet":
                return .wallet
            case let other?:
                throw error(at: field + ".policy", "is open, bearer, signed or wallet, not \(other)")
            }
        }

        /// One `matrix` entry: an `app_id` (or glob), the Herald app it pushes as, the push service.
        func matrixApp(_ value: Any, at field: String, apps: Set<String>, pushers: [any MatrixPusher]) throws -> MatrixApp {
            let block = try map(value, at: field, keys: ConfigFile.matrixKeys)
            guard let appID = try string(block["app_id"], at: field + ".app_id"), !appID.isEmpty, appID.utf8.count <= 256 else {
                throw error(at: field + ".app_id", "is required: 1 to 256 characters")
            }
            guard let app = try string(block["app"], at: field + ".app"), apps.contains(app) else {
                throw error(at: field + ".app", "names one of apps (\(apps.sorted().joined(separator: ", ")))")
            }
            guard let type = try string(block["type"], at: field + ".type"), let pusher = pushers.first(where: { $0.kind.rawValue == type }) else {
                throw error(at: field + ".type", "is \(MatrixApp.Kind.names(pushers))")
            }
            let kind = pusher.kind
            func flag(_ key: String, _ fallback: Bool) throws -> Bool {
                guard let value = block[key] else { return fallback }
                guard let flag = value as? Bool else { throw error(at: field + "." + key, "is true or false") }
                return flag
            }
            let allowed = block["allowed_endpoints"] == nil ? nil : try strings(block["allowed_endpoints"], at: field + ".allowed_endpoints")
            if allowed != nil, !pusher.takesAllowedEndpoints {
                throw error(at: field + ".allowed_endpoints", "is for type \(MatrixApp.Kind.names(pushers.filter(\.takesAllowedEndpoints)))")
            }
            return MatrixApp(
                pattern: appID, app: app, kind: kind, convertTokenToHex: try flag("convert_device_token_to_hex", true),
                allowedEndpoints: allowed?.map { $0.lowercased() }, encryptedRoomDetails: try flag("encrypted_room_details", false))
        }

        /// `agent_event`: the app's own titles and bodies, row by row of Claudiator's table.
        func agentEventTexts(_ value: Any, at field: String) throws -> AgentEventTemplate.Texts {
            let block = try map(value, at: field, keys: ConfigFile.agentEventKeys)
            var texts = AgentEventTemplate.Texts()
            func text(_ key: String, _ current: AgentEventTemplate.Text) throws -> AgentEventTemplate.Text {
                guard let value = block[key] else { return current }
                let row = try map(value, at: field + "." + key, keys: ConfigFile.textKeys)
                return AgentEventTemplate.Text(
                    title: try string(row["title"], at: field + "." + key + ".title") ?? current.title,
                    body: try string(row["body"], at: field + "." + key + ".body") ?? current.body)
            }
            texts.stop = try text("stop", texts.stop)
            texts.permissionPrompt = try text("permission_prompt", texts.permissionPrompt)
            texts.idlePrompt = try text("idle_prompt", texts.idlePrompt)
            texts.other = try text("other", texts.other)
            if let fallback = try string(block["other_without_message"], at: field + ".other_without_message") {
                texts.otherWithoutMessage = fallback
            }
            return texts
        }

        /// A service's refusal of a variable, named as the block's key that stands for it, with
        /// every variable in the message named so too.
        func refusal(_ failure: HeraldConfigurationError, at app: String, block: PushServiceSettingsBlock?) -> HeraldConfigurationError {
            guard let block else { return error(at: app, failure.field + " " + failure.message) }
            var message = failure.message
            for (key, variable) in block.variables { message = message.replacingOccurrences(of: variable, with: key) }
            return error(at: app + "." + block.key + "." + (block.key(for: failure.field) ?? failure.field), message)
        }

        /// A push service's block, read as the `HERALD_*` variables its keys stand for.
        func variables(_ value: Any, at field: String, block: PushServiceSettingsBlock) throws -> [String: String] {
            let map = try map(value, at: field, keys: Set(block.variables.keys))
            var variables: [String: String] = [:]
            for (key, variable) in block.variables {
                if let text = try string(map[key], at: field + "." + key) { variables[variable] = text }
            }
            return variables
        }
    }
}
