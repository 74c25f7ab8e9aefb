import Foundation
import HeraldCore

/// The OpenAPI 3.1 description of Herald's HTTP API, kept as a file (`Resources/openapi.json`,
/// and `Resources/openapi-matrix.json` for the Matrix route) that the build embeds: `json` is that
/// file. `GET /openapi.json` serves `served(…)`, the same document with this instance's apps,
/// limits and version in it, so that every request it calls valid is one this instance accepts
/// (schemathesis checks both ways in CI). A test checks it lists exactly the routes the gateway serves.
public enum OpenAPIDocument {
    /// The document as kept in the repository.
    public static let json = String(decoding: PackageResources.openapi_json, as: UTF8.self)
    /// The Matrix Push Gateway API (`/_matrix/push/v1/notify`): its path and schemas, merged into
    /// the served document when Matrix apps are configured.
    static let matrixJSON = String(decoding: PackageResources.openapi_matrix_json, as: UTF8.self)

    /// The document with the values an instance sets: `AppID` becomes the enum of its apps, the
    /// watch-key and alias limits its configuration's, and `Registration` gains a branch for each
    /// push service added to the built-in three (`addedPlatforms`: platform → its token's JSON Schema),
    /// and `Event` one for each added template (`addedTemplates`: name → its `fields`' JSON Schema).
    public static func served(
        apps: [String], maximumWatchKeys: Int, maximumAliases: Int, matrix: Bool = false, operations: Bool = true,
        addedPlatforms: [String: String] = [:], addedTemplates: [String: String] = [:]
    ) -> String {
        guard var document = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            var components = document["components"] as? [String: Any], var schemas = components["schemas"] as? [String: Any]
        else { return json }
        // `/metrics` and `/v1/stats` answer on the admin listener only, where the instance has one.
        if !operations, var paths = document["paths"] as? [String: Any] {
            paths["/metrics"] = nil
            paths["/v1/stats"] = nil
            document["paths"] = paths
        }
        // The Matrix push gateway's route, where this instance serves Matrix apps.
        if matrix, let part = try? JSONSerialization.jsonObject(with: Data(matrixJSON.utf8)) as? [String: Any],
            var paths = document["paths"] as? [String: Any], let matrixPaths = part["paths"] as? [String: Any],
            let matrixSchemas = part["schemas"] as? [String: Any]
        {
            paths.merge(matrixPaths) { _, new in new }
            document["paths"] = paths
            schemas.merge(matrixSchemas) { _, new in new }
        }
        if var info = document["info"] as? [String: Any] {
            info["version"] = HeraldVersion.current
            document["info"] = info
        }
        if var app = schemas["AppID"] as? [String: Any] {
            app["enum"] = apps
            schemas["AppID"] = app
        }
        // A branch of `name`'s `oneOf` for each added entry (its JSON Schema parsed): `base`, and
        // an object with `required` and the properties `properties` makes of the entry.
        func addBranches(to name: String, base: String, for added: [String: String], required: [String], properties: (String, Any) -> [String: Any]) {
            guard var schema = schemas[name] as? [String: Any], var branches = schema["oneOf"] as? [Any] else { return }
            for (key, json) in added.sorted(by: { $0.key < $1.key }) {
                guard let parsed = try? JSONSerialization.jsonObject(with: Data(json.utf8)) else { continue }
                branches.append(["allOf": [["$ref": "#/components/schemas/" + base], ["type": "object", "required": required, "properties": properties(key, parsed)]]])
            }
            schema["oneOf"] = branches
            schemas[name] = schema
        }
        addBranches(to: "Registration", base: "RegistrationCommon", for: addedPlatforms, required: ["platform", "device_token"]) { platform, token in
            [
                "platform": ["const": platform], "device_token": token, "token_kind": ["anyOf": [["const": "token"], ["type": "null"]]],
                "subscription": ["type": "null", "description": "a subscription is for platform web (422 otherwise)"],
            ]
        }
        addBranches(to: "Event", base: "EventOptions", for: addedTemplates, required: ["template", "fields"]) { name, fields in
            ["template": ["const": name], "targets": ["type": "object"], "fields": fields]
        }
        // A list property's maxItems, in an object schema (nullable lists keep it beside their types).
        func limit(_ object: [String: Any], _ list: String, to maximum: Int) -> [String: Any] {
            guard var properties = object["properties"] as? [String: Any], var schema = properties[list] as? [String: Any] else { return object }
            schema["maxItems"] = maximum
            properties[list] = schema
            return object.merging(["properties": properties]) { _, new in new }
        }
        for list in ["watched_addresses", "addresses", "contextual_routes"] {
            schemas["RegistrationCommon"] = (schemas["RegistrationCommon"] as? [String: Any]).map { limit($0, list, to: maximumWatchKeys) }
            if var update = schemas["WatchSetUpdate"] as? [String: Any], let branches = update["anyOf"] as? [[String: Any]] {
                update["anyOf"] = branches.map { limit($0, list, to: maximumWatchKeys) }
                schemas["WatchSetUpdate"] = update
            }
        }
        schemas["ContextualRoute"] = (schemas["ContextualRoute"] as? [String: Any]).map { limit($0, "aliases", to: maximumAliases) }
        components["schemas"] = schemas
        document["components"] = components
        guard let data = try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes]) else { return json }
        return String(decoding: data, as: UTF8.self)
    }
}
