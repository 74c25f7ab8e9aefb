import Foundation
import HeraldCore

/// The OpenAPI 3.1 description of Herald's HTTP API. `json` is the document as kept in the repo;
/// `GET /openapi.json` serves `served(…)`, the same document with this instance's apps and limits
/// in it, so that every request it calls valid is one this instance accepts (schemathesis checks
/// both ways in CI). A test checks it lists exactly the routes the gateway serves.
public enum OpenAPIDocument {
    /// The document with the values an instance sets: `AppID` becomes the enum of its apps, and the
    /// watch-key and alias limits its configuration's.
    public static func served(
        apps: [String], maximumWatchKeys: Int, maximumAliases: Int, matrix: Bool = false, operations: Bool = true
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

    /// The Matrix Push Gateway API (`/_matrix/push/v1/notify`): its path and schemas, merged into
    /// the served document when Matrix apps are configured.
    static let matrixJSON = #"""
    {
     "paths": {
      "/_matrix/push/v1/notify": {
       "post": {
        "summary": "Matrix Push Gateway API: a homeserver's notification; answered once its pushes are committed, with the pushkeys the homeserver should drop",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/MatrixNotifyRequest"}}}},
        "responses": {
         "200": {
          "description": "Committed (repeats of an (event_id, pushkey) are accepted and not pushed again)",
          "content": {"application/json": {"schema": {
           "type": "object", "properties": {"rejected": {"type": "array", "items": {"type": "string"}}}, "required": ["rejected"]}}}
         },
         "400": {"$ref": "#/components/responses/Error"},
         "413": {"$ref": "#/components/responses/Error"},
         "415": {"$ref": "#/components/responses/Error"}
        }
       },
       "get": {
        "summary": "UnifiedPush gateway discovery",
        "responses": {
         "200": {"description": "This is a Matrix gateway", "content": {"application/json": {"schema": {
          "type": "object", "properties": {"unifiedpush": {"type": "object", "properties": {"gateway": {"const": "matrix"}}, "required": ["gateway"]}},
          "required": ["unifiedpush"]}}}}
        }
       }
      }
     },
     "schemas": {
      "MatrixNotifyRequest": {
       "type": "object", "required": ["notification"],
       "properties": {"notification": {"$ref": "#/components/schemas/MatrixNotification"}}
      },
      "MatrixNotification": {
       "type": "object", "required": ["devices"],
       "properties": {
        "event_id": {"type": ["string", "null"]}, "room_id": {"type": ["string", "null"]}, "type": {"type": ["string", "null"]},
        "sender": {"type": ["string", "null"]}, "sender_display_name": {"type": ["string", "null"]}, "room_name": {"type": ["string", "null"]},
        "room_alias": {"type": ["string", "null"]}, "membership": {"type": ["string", "null"]}, "user_is_target": {"type": ["boolean", "null"]},
        "prio": {"type": ["string", "null"], "description": "high or low"}, "content": {"type": ["object", "null"]},
        "counts": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {
         "unread": {"type": ["integer", "null"], "minimum": 0, "maximum": 9223372036854775807},
         "missed_calls": {"type": ["integer", "null"], "minimum": 0, "maximum": 9223372036854775807}}}]},
        "devices": {"type": "array", "minItems": 1, "maxItems": 100, "items": {"$ref": "#/components/schemas/MatrixDevice"}}
       }
      },
      "MatrixDevice": {
       "type": "object", "required": ["app_id", "pushkey"],
       "properties": {
        "app_id": {"type": "string"}, "pushkey": {"type": "string"},
        "pushkey_ts": {"type": ["integer", "null"], "minimum": 0, "maximum": 253402300799, "description": "Unix seconds when the pusher was set: at most 5 minutes ahead of the gateway's clock (400 otherwise)."},
        "data": {"type": ["object", "null"]}, "tweaks": {"type": ["object", "null"]}
       }
      }
     }
    }
    """#

    public static let json = #"""
    {
     "openapi": "3.1.0",
     "info": {
      "title": "Herald",
      "version": "0.1.0",
      "description": "Self-hosted push gateway for end-to-end-encrypted messaging apps. Errors are {\"error\": {\"code\", \"message\", \"field\"}}, the router's too: a documented path asked with another method answers 405 with Allow, an undocumented path 404. 400 means the request does not have the form this document gives it; 422 (code invalid_value) means it has the form and is refused on what it means: a limit in UTF-8 bytes or across fields, a time window, a Kaspa network, a push that breaks the push service's rules, an endpoint that leads nowhere public. Optional body fields may be null, which means absent. Bodies are limited to 64 KiB, /v1/events:batch to 8 MiB (1,000 events of the largest push fit twice over); both limits are configurable (HERALD_MAX_BODY_BYTES, HERALD_MAX_BATCH_BODY_BYTES) and a larger body is a 413 body_too_large. Every request may carry X-Request-ID (1-128 visible ASCII characters; else Herald makes one); every answer carries the id, which Herald's log lines for the request name as request_id."
     },
     "paths": {
      "/v1/push/register": {
       "post": {
        "summary": "Register a device and replace its watch set",
        "requestBody": {
         "required": true,
         "content": {
          "application/json": {
           "schema": {
            "$ref": "#/components/schemas/Registration"
           }
          }
         }
        },
        "responses": {
         "200": {
          "description": "Registered",
          "content": {
           "application/json": {
            "schema": {
             "type": "object",
             "properties": {
              "registered": {
               "type": "boolean"
              },
              "watched_addresses": {
               "type": "integer"
              }
             },
             "required": [
              "registered",
              "watched_addresses"
             ]
            }
           }
          }
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/v1/push/update": {
       "put": {
        "summary": "Replace the watch set of a registered device",
        "requestBody": {
         "required": true,
         "content": {
          "application/json": {
           "schema": {
            "$ref": "#/components/schemas/WatchSetUpdate"
           }
          }
         }
        },
        "responses": {
         "200": {
          "description": "Updated",
          "content": {
           "application/json": {
            "schema": {
             "type": "object",
             "properties": {
              "updated": {
               "type": "boolean"
              },
              "watched_addresses": {
               "type": "integer"
              }
             },
             "required": [
              "updated",
              "watched_addresses"
             ]
            }
           }
          }
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "404": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/v1/push/unregister": {
       "delete": {
        "summary": "Remove a device (idempotent)",
        "requestBody": {
         "required": true,
         "content": {
          "application/json": {
           "schema": {
            "type": "object",
            "properties": {
             "device_token": {
              "type": "string"
             },
             "app": {
              "anyOf": [
               {
                "$ref": "#/components/schemas/AppID"
               },
               {
                "type": "null"
               }
              ]
             }
            },
            "required": [
             "device_token"
            ]
           }
          }
         }
        },
        "responses": {
         "200": {
          "description": "Done",
          "content": {
           "application/json": {
            "schema": {
             "type": "object",
             "properties": {
              "unregistered": {
               "type": "boolean"
              }
             },
             "required": [
              "unregistered"
             ]
            }
           }
          }
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/v1/push/status": {
       "get": {
        "summary": "A device's registration",
        "parameters": [
         {
          "name": "device_token",
          "in": "query",
          "required": false,
          "schema": {
           "type": "string",
           "minLength": 1
          },
          "description": "the token; or the X-Device-Token header, which stays out of access logs and wins when both are given (one of them is required)"
         },
         {
          "name": "X-Device-Token",
          "in": "header",
          "required": false,
          "schema": {
           "type": "string",
           "minLength": 1
          }
         },
         {
          "name": "app",
          "in": "query",
          "required": false,
          "schema": {
           "$ref": "#/components/schemas/AppID"
          }
         }
        ],
        "responses": {
         "200": {
          "description": "Status",
          "content": {
           "application/json": {
            "schema": {
             "type": "object",
             "properties": {
              "registered": {
               "type": "boolean"
              },
              "watched_addresses": {
               "type": "array",
               "items": {
                "type": "string"
               }
              },
              "last_seen": {
               "type": [
                "integer",
                "null"
               ],
               "description": "unix seconds"
              }
             },
             "required": [
              "registered",
              "watched_addresses",
              "last_seen"
             ]
            }
           }
          }
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/v1/push/vapid-public-key": {
       "get": {
        "summary": "The app's VAPID application server key, for a web app's pushManager.subscribe",
        "parameters": [
         {
          "name": "app",
          "in": "query",
          "required": false,
          "schema": {
           "$ref": "#/components/schemas/AppID"
          }
         }
        ],
        "responses": {
         "200": {
          "description": "The key",
          "content": {
           "application/json": {
            "schema": {
             "type": "object",
             "properties": {
              "app": {
               "type": "string"
              },
              "public_key": {
               "type": "string",
               "description": "base64url of the 65-byte P-256 point"
              }
             },
             "required": [
              "app",
              "public_key"
             ]
            }
           }
          }
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "404": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/api/devices/token": {
       "post": {
        "summary": "SafeWhisper: register the device's APNs token; it becomes the device's only token, and moves here from another device id",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppHeader"
         },
         {
          "$ref": "#/components/parameters/DeviceIDHeader"
         }
        ],
        "requestBody": {
         "$ref": "#/components/requestBodies/SafeWhisperToken"
        },
        "responses": {
         "201": {
          "$ref": "#/components/responses/SafeWhisperRegistered"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/api/devices/logout": {
       "post": {
        "summary": "SafeWhisper: log the device out, removing all its tokens",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppHeader"
         },
         {
          "$ref": "#/components/parameters/DeviceIDHeader"
         }
        ],
        "responses": {
         "200": {
          "$ref": "#/components/responses/SafeWhisperLoggedOut"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/apns/register": {
       "post": {
        "summary": "GhostTalk: register a device for a session (watch key session:<id>)",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppHeader"
         }
        ],
        "requestBody": {
         "$ref": "#/components/requestBodies/GhostTalkRegistration"
        },
        "responses": {
         "200": {
          "$ref": "#/components/responses/GhostTalkDone"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/apns/unregister": {
       "post": {
        "summary": "GhostTalk: remove the devices registered for a session",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppHeader"
         }
        ],
        "requestBody": {
         "$ref": "#/components/requestBodies/GhostTalkSession"
        },
        "responses": {
         "200": {
          "$ref": "#/components/responses/GhostTalkDone"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/apns/stats": {
       "get": {
        "summary": "GhostTalk: registrations, production mode and topic of the app",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppHeader"
         }
        ],
        "responses": {
         "200": {
          "$ref": "#/components/responses/GhostTalkStats"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/apns/send": {
       "post": {
        "summary": "GhostTalk, testing only: a session.message push to a session; 404 unless enabled, always behind a publisher key",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppHeader"
         }
        ],
        "security": [
         {
          "publisherKey": []
         }
        ],
        "requestBody": {
         "$ref": "#/components/requestBodies/GhostTalkSend"
        },
        "responses": {
         "200": {
          "$ref": "#/components/responses/GhostTalkSent"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "404": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/api/v1/push/register": {
       "post": {
        "summary": "Claudiator: register a device, behind the app key as a bearer",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppHeader"
         }
        ],
        "security": [
         {
          "registrationKey": []
         }
        ],
        "requestBody": {
         "$ref": "#/components/requestBodies/ClaudiatorRegistration"
        },
        "responses": {
         "200": {
          "$ref": "#/components/responses/ClaudiatorRegistered"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/apps/{app}/api/devices/token": {
       "post": {
        "summary": "SafeWhisper: register the device's APNs token; it becomes the device's only token, and moves here from another device id",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppPath"
         },
         {
          "$ref": "#/components/parameters/AppHeader"
         },
         {
          "$ref": "#/components/parameters/DeviceIDHeader"
         }
        ],
        "requestBody": {
         "$ref": "#/components/requestBodies/SafeWhisperToken"
        },
        "responses": {
         "201": {
          "$ref": "#/components/responses/SafeWhisperRegistered"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/apps/{app}/api/devices/logout": {
       "post": {
        "summary": "SafeWhisper: log the device out, removing all its tokens",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppPath"
         },
         {
          "$ref": "#/components/parameters/AppHeader"
         },
         {
          "$ref": "#/components/parameters/DeviceIDHeader"
         }
        ],
        "responses": {
         "200": {
          "$ref": "#/components/responses/SafeWhisperLoggedOut"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/apps/{app}/apns/register": {
       "post": {
        "summary": "GhostTalk: register a device for a session (watch key session:<id>)",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppPath"
         },
         {
          "$ref": "#/components/parameters/AppHeader"
         }
        ],
        "requestBody": {
         "$ref": "#/components/requestBodies/GhostTalkRegistration"
        },
        "responses": {
         "200": {
          "$ref": "#/components/responses/GhostTalkDone"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/apps/{app}/apns/unregister": {
       "post": {
        "summary": "GhostTalk: remove the devices registered for a session",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppPath"
         },
         {
          "$ref": "#/components/parameters/AppHeader"
         }
        ],
        "requestBody": {
         "$ref": "#/components/requestBodies/GhostTalkSession"
        },
        "responses": {
         "200": {
          "$ref": "#/components/responses/GhostTalkDone"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/apps/{app}/apns/stats": {
       "get": {
        "summary": "GhostTalk: registrations, production mode and topic of the app",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppPath"
         },
         {
          "$ref": "#/components/parameters/AppHeader"
         }
        ],
        "responses": {
         "200": {
          "$ref": "#/components/responses/GhostTalkStats"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/apps/{app}/apns/send": {
       "post": {
        "summary": "GhostTalk, testing only: a session.message push to a session; 404 unless enabled, always behind a publisher key",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppPath"
         },
         {
          "$ref": "#/components/parameters/AppHeader"
         }
        ],
        "security": [
         {
          "publisherKey": []
         }
        ],
        "requestBody": {
         "$ref": "#/components/requestBodies/GhostTalkSend"
        },
        "responses": {
         "200": {
          "$ref": "#/components/responses/GhostTalkSent"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "404": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/apps/{app}/api/v1/push/register": {
       "post": {
        "summary": "Claudiator: register a device, behind the app key as a bearer",
        "parameters": [
         {
          "$ref": "#/components/parameters/AppPath"
         },
         {
          "$ref": "#/components/parameters/AppHeader"
         }
        ],
        "security": [
         {
          "registrationKey": []
         }
        ],
        "requestBody": {
         "$ref": "#/components/requestBodies/ClaudiatorRegistration"
        },
        "responses": {
         "200": {
          "$ref": "#/components/responses/ClaudiatorRegistered"
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/v1/events/{id}": {
       "get": {
        "summary": "What became of an event: its deliveries by state and the push services' reasons (never a token)",
        "security": [
         {
          "publisherKey": []
         }
        ],
        "parameters": [
         {
          "name": "id",
          "in": "path",
          "required": true,
          "schema": {
           "type": "string"
          }
         }
        ],
        "responses": {
         "200": {
          "description": "The event",
          "content": {
           "application/json": {
            "schema": {
             "type": "object",
             "properties": {
              "event_id": {"type": "string"},
              "app": {"type": "string"},
              "template": {"type": "string"},
              "created_at": {"type": "integer"},
              "expires_at": {"type": "integer"},
              "deliveries": {
               "type": "object",
               "properties": {
                "queued": {"type": "integer"}, "sent": {"type": "integer"}, "failed": {"type": "integer"}, "expired": {"type": "integer"}
               },
               "required": ["queued", "sent", "failed", "expired"]
              },
              "reasons": {
               "type": "object",
               "additionalProperties": {"type": "object", "additionalProperties": {"type": "integer"}}
              }
             },
             "required": ["event_id", "app", "template", "created_at", "expires_at", "deliveries", "reasons"]
            }
           }
          }
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "404": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/v1/events": {
       "post": {
        "summary": "Publish an event (answers once it is durable; never waits on APNs)",
        "security": [
         {
          "publisherKey": []
         }
        ],
        "requestBody": {
         "required": true,
         "content": {
          "application/json": {
           "schema": {
            "$ref": "#/components/schemas/Event"
           }
          }
         }
        },
        "responses": {
         "202": {
          "description": "Accepted",
          "content": {
           "application/json": {
            "schema": {
             "type": "object",
             "properties": {
              "event_id": {
               "type": "string"
              },
              "deliveries": {
               "type": "integer"
              },
              "unknown_tokens": {
               "type": "array",
               "items": {
                "type": "string"
               }
              }
             },
             "required": [
              "event_id",
              "deliveries",
              "unknown_tokens"
             ]
            }
           }
          }
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/v1/events:batch": {
       "post": {
        "summary": "Publish up to 1,000 events, all or nothing",
        "security": [
         {
          "publisherKey": []
         }
        ],
        "requestBody": {
         "required": true,
         "content": {
          "application/json": {
           "schema": {
            "type": "object",
            "properties": {
             "events": {
              "type": "array",
              "minItems": 1,
              "maxItems": 1000,
              "items": {
               "$ref": "#/components/schemas/Event"
              }
             }
            },
            "required": [
             "events"
            ]
           }
          }
         }
        },
        "responses": {
         "202": {
          "description": "Accepted",
          "content": {
           "application/json": {
            "schema": {
             "type": "object",
             "properties": {
              "events": {
               "type": "array",
               "items": {
                "type": "object",
                "properties": {
                 "event_id": {
                  "type": "string"
                 },
                 "deliveries": {
                  "type": "integer"
                 }
                },
                "required": [
                 "event_id",
                 "deliveries"
                ]
               }
              }
             },
             "required": [
              "events"
             ]
            }
           }
          }
         },
         "400": {
          "$ref": "#/components/responses/Error"
         },
         "401": {
          "$ref": "#/components/responses/Error"
         },
         "403": {
          "$ref": "#/components/responses/Error"
         },
         "413": {
          "$ref": "#/components/responses/Error"
         },
         "415": {
          "$ref": "#/components/responses/Error"
         },
         "422": {
          "$ref": "#/components/responses/Error"
         },
         "429": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/healthz": {
       "get": {
        "summary": "Liveness",
        "responses": {
         "200": {
          "description": "Alive",
          "content": {
           "application/json": {
            "schema": {
             "type": "object",
             "properties": {
              "status": {
               "const": "ok"
              }
             },
             "required": [
              "status"
             ]
            }
           }
          }
         }
        }
       }
      },
      "/readyz": {
       "get": {
        "summary": "Readiness: the store answers a cheap query and the built-in simulators in use listen; 503 not_ready names each failure",
        "responses": {
         "200": {
          "description": "Ready: what was checked, and what each app sends with per platform (credentials or simulator)",
          "content": {
           "application/json": {
            "schema": {
             "type": "object",
             "required": [
              "ready",
              "checked",
              "apps"
             ],
             "properties": {
              "ready": {
               "type": "boolean"
              },
              "checked": {
               "type": "array",
               "items": {
                "type": "string"
               }
              },
              "apps": {
               "type": "object",
               "additionalProperties": {
                "type": "object",
                "additionalProperties": {
                 "type": "string"
                }
               }
              }
             }
            }
           }
          }
         },
         "503": {
          "$ref": "#/components/responses/Error"
         }
        }
       }
      },
      "/v1/stats": {
       "get": {
        "summary": "Registrations per app and platform, deliveries by state, failure reasons, queue depth, oldest pending age: read from counters the store keeps, not by counting rows",
        "responses": {
         "200": {
          "description": "Stats",
          "content": {
           "application/json": {
            "schema": {
             "type": "object",
             "required": [
              "registrations",
              "deliveries",
              "failure_reasons",
              "dropped_reasons",
              "queue_depth",
              "oldest_pending_age_seconds"
             ],
             "properties": {
              "registrations": {
               "type": "object",
               "additionalProperties": {
                "type": "object",
                "additionalProperties": {
                 "type": "integer"
                }
               }
              },
              "deliveries": {
               "type": "object",
               "additionalProperties": {
                "type": "integer"
               }
              },
              "dropped_reasons": {
               "type": "object",
               "additionalProperties": {
                "type": "integer"
               }
              },
              "failure_reasons": {
               "type": "object",
               "additionalProperties": {
                "type": "integer"
               }
              },
              "queue_depth": {
               "type": "integer"
              },
              "oldest_pending_age_seconds": {
               "type": [
                "integer",
                "null"
               ]
              },
              "kaspa": {
               "type": "object"
              }
             }
            }
           }
          }
         }
        }
       }
      },
      "/openapi.json": {
       "get": {
        "summary": "This document, with this instance's apps and limits",
        "responses": {
         "200": {
          "description": "OpenAPI 3.1",
          "content": {
           "application/json": {
            "schema": {
             "type": "object"
            }
           }
          }
         }
        }
       }
      },
      "/metrics": {
       "get": {
        "summary": "Prometheus text: events accepted, deliveries created, delivery attempts by outcome and reason, refused APNs credentials",
        "responses": {
         "200": {
          "description": "Prometheus exposition format",
          "content": {
           "text/plain": {
            "schema": {
             "type": "string"
            }
           }
          }
         }
        }
       }
      }
     },
     "components": {
      "securitySchemes": {
       "publisherKey": {
        "type": "http",
        "scheme": "bearer"
       },
       "registrationKey": {
        "type": "http",
        "scheme": "bearer",
        "description": "the app's registration key, or a token its signed policy accepts"
       }
      },
      "parameters": {
       "AppHeader": {
        "name": "X-Herald-App",
        "in": "header",
        "required": false,
        "schema": {
         "$ref": "#/components/schemas/AppID"
        },
        "description": "the app, when the instance serves several; with /apps/{app}, the same app (422 otherwise)"
       },
       "AppPath": {
        "name": "app",
        "in": "path",
        "required": true,
        "schema": {
         "$ref": "#/components/schemas/AppID"
        }
       },
       "DeviceIDHeader": {
        "name": "X-Device-ID",
        "in": "header",
        "required": true,
        "schema": {
         "type": "string",
         "minLength": 1,
         "maxLength": 256
        }
       }
      },
      "requestBodies": {
       "SafeWhisperToken": {
        "required": true,
        "content": {
         "application/json": {
          "schema": {
           "type": "object",
           "properties": {
            "apnsToken": {
             "$ref": "#/components/schemas/APNsToken"
            }
           },
           "required": [
            "apnsToken"
           ]
          }
         }
        }
       },
       "GhostTalkRegistration": {
        "required": true,
        "content": {
         "application/json": {
          "schema": {
           "type": "object",
           "properties": {
            "session_id": {
             "$ref": "#/components/schemas/Identifier"
            },
            "device_token": {
             "$ref": "#/components/schemas/APNsToken"
            }
           },
           "required": [
            "session_id",
            "device_token"
           ]
          }
         }
        }
       },
       "GhostTalkSession": {
        "required": true,
        "content": {
         "application/json": {
          "schema": {
           "type": "object",
           "properties": {
            "session_id": {
             "$ref": "#/components/schemas/Identifier"
            }
           },
           "required": [
            "session_id"
           ]
          }
         }
        }
       },
       "GhostTalkSend": {
        "required": true,
        "content": {
         "application/json": {
          "schema": {
           "type": "object",
           "properties": {
            "session_id": {
             "$ref": "#/components/schemas/Identifier"
            },
            "payload": {
             "type": "object",
             "properties": {
              "message_id": {
               "type": "string",
               "minLength": 1,
               "maxLength": 256
              },
              "timestamp": {
               "anyOf": [
                {
                 "type": "integer",
                 "minimum": -9223372036854775808,
                 "maximum": 9223372036854775807
                },
                {
                 "type": "string",
                 "format": "date-time"
                }
               ],
               "description": "unix seconds or an RFC 3339 date (before 1970: negative seconds)"
              },
              "encrypted": {
               "type": [
                "boolean",
                "null"
               ]
              },
              "has_attachment": {
               "type": [
                "boolean",
                "null"
               ]
              }
             },
             "required": [
              "message_id",
              "timestamp"
             ]
            }
           },
           "required": [
            "session_id",
            "payload"
           ]
          }
         }
        }
       },
       "ClaudiatorRegistration": {
        "required": true,
        "content": {
         "application/json": {
          "schema": {
           "oneOf": [
            {
             "type": "object",
             "properties": {
              "platform": {
               "const": "ios"
              },
              "token": {
               "$ref": "#/components/schemas/APNsToken"
              }
             },
             "required": [
              "platform",
              "token"
             ]
            },
            {
             "type": "object",
             "properties": {
              "platform": {
               "const": "android"
              },
              "token": {
               "$ref": "#/components/schemas/FCMToken"
              }
             },
             "required": [
              "platform",
              "token"
             ]
            }
           ]
          }
         }
        }
       }
      },
      "responses": {
       "Error": {
        "description": "An error naming the field at fault",
        "content": {
         "application/json": {
          "schema": {
           "$ref": "#/components/schemas/Error"
          }
         }
        }
       },
       "SafeWhisperRegistered": {
        "description": "Registered",
        "content": {
         "application/json": {
          "schema": {
           "type": "object",
           "properties": {
            "id": {
             "type": "string",
             "format": "uuid"
            }
           },
           "required": [
            "id"
           ]
          }
         }
        }
       },
       "SafeWhisperLoggedOut": {
        "description": "Logged out",
        "content": {
         "application/json": {
          "schema": {
           "type": "object",
           "properties": {
            "removed": {
             "type": "integer"
            }
           },
           "required": [
            "removed"
           ]
          }
         }
        }
       },
       "GhostTalkDone": {
        "description": "OK",
        "content": {
         "application/json": {
          "schema": {
           "type": "object",
           "properties": {
            "success": {
             "type": "boolean"
            },
            "message": {
             "type": "string"
            }
           },
           "required": [
            "success",
            "message"
           ]
          }
         }
        }
       },
       "GhostTalkStats": {
        "description": "OK",
        "content": {
         "application/json": {
          "schema": {
           "type": "object",
           "properties": {
            "total_registrations": {
             "type": "integer"
            },
            "production_mode": {
             "type": "boolean"
            },
            "topic": {
             "type": "string"
            }
           },
           "required": [
            "total_registrations",
            "production_mode",
            "topic"
           ]
          }
         }
        }
       },
       "GhostTalkSent": {
        "description": "OK",
        "content": {
         "application/json": {
          "schema": {
           "type": "object",
           "properties": {
            "success": {
             "type": "boolean"
            },
            "message": {
             "type": "string"
            },
            "deliveries": {
             "type": "integer"
            }
           },
           "required": [
            "success",
            "message",
            "deliveries"
           ]
          }
         }
        }
       },
       "ClaudiatorRegistered": {
        "description": "OK",
        "content": {
         "application/json": {
          "schema": {
           "type": "object",
           "properties": {
            "registered": {
             "type": "boolean"
            }
           },
           "required": [
            "registered"
           ]
          }
         }
        }
       }
      },
      "schemas": {
       "AppID": {
        "type": "string",
        "description": "an app this instance serves; the served document lists them (enum)"
       },
       "Error": {
        "type": "object",
        "properties": {
         "error": {
          "type": "object",
          "properties": {
           "code": {
            "type": "string"
           },
           "message": {
            "type": "string"
           },
           "field": {
            "type": "string"
           }
          },
          "required": [
           "code",
           "message"
          ]
         }
        },
        "required": [
         "error"
        ]
       },
       "KaspaAddress": {
        "type": "string",
        "format": "kaspa-address",
        "maxLength": 100,
        "description": "a Kaspa address (kaspa:, kaspatest:, kaspasim:, kaspadev:) with its checksum"
       },
       "APNsToken": {
        "type": "string",
        "pattern": "^([0-9a-fA-F]{2}){32,100}$",
        "description": "an APNs device token: 64 to 200 hexadecimal characters"
       },
       "FCMToken": {
        "type": "string",
        "pattern": "^[!-~]{1,4096}$",
        "description": "an FCM registration token: 1 to 4,096 visible ASCII characters"
       },
       "InstallationID": {
        "type": "string",
        "pattern": "^[A-Za-z0-9_-]{22}$",
        "description": "a Firebase Installation ID"
       },
       "Identifier": {
        "type": "string",
        "pattern": "^[^\\u0000-\\u0020\\u007f]{1,256}$",
        "description": "1 to 256 characters, no spaces or control characters"
       },
       "WatchKey": {
        "description": "a Kaspa address, conv:<hash>, session:<id> or user:<id> (ids of 1 to 256 characters, no spaces or control characters)",
        "anyOf": [
         {
          "$ref": "#/components/schemas/KaspaAddress"
         },
         {
          "type": "string",
          "pattern": "^(conv|session|user):[^\\u0000-\\u0020\\u007f]{1,256}$"
         }
        ]
       },
       "OwnAddress": {
        "description": "one of the device's own Kaspa addresses; under the wallet policy with its wallet's signature (Kaspa message signing, hex) of herald-register:<app>:<SHA-256 of the device token, hex>:<timestamp>",
        "anyOf": [
         {
          "$ref": "#/components/schemas/KaspaAddress"
         },
         {
          "type": "object",
          "properties": {
           "address": {
            "$ref": "#/components/schemas/KaspaAddress"
           },
           "timestamp": {
            "type": [
             "integer",
             "null"
            ],
            "minimum": -9223372036854775808,
            "maximum": 9223372036854775807,
            "description": "unix seconds, within 10 minutes of now"
           },
           "signature": {
            "type": [
             "string",
             "null"
            ],
            "description": "128 hex characters"
           }
          },
          "required": [
           "address"
          ]
         }
        ]
       },
       "ContextualRoute": {
        "type": "object",
        "properties": {
         "peer_address": {
          "$ref": "#/components/schemas/KaspaAddress"
         },
         "aliases": {
          "type": [
           "array",
           "null"
          ],
          "maxItems": 100,
          "items": {
           "type": "string",
           "pattern": "^[^:]{1,128}$",
           "description": "1 to 128 characters without ':'"
          }
         }
        },
        "required": [
         "peer_address"
        ]
       },
       "WebPushSubscription": {
        "type": "object",
        "properties": {
         "endpoint": {
          "type": "string",
          "minLength": 1,
          "maxLength": 1000,
          "description": "an https URL that resolves to public addresses (422 otherwise)"
         },
         "expirationTime": {
          "type": [
           "integer",
           "null"
          ]
         },
         "keys": {
          "type": "object",
          "properties": {
           "p256dh": {
            "type": "string",
            "description": "base64url, a 65-byte uncompressed P-256 point (422 otherwise)"
           },
           "auth": {
            "type": "string",
            "description": "base64url, 16 bytes (422 otherwise)"
           }
          },
          "required": [
           "p256dh",
           "auth"
          ]
         }
        },
        "required": [
         "endpoint",
         "keys"
        ],
        "description": "a browser's PushSubscription.toJSON() (or a UnifiedPush distributor's endpoint and keys); the endpoint is the device's identity"
       },
       "RegistrationCommon": {
        "type": "object",
        "properties": {
         "watched_addresses": {
          "type": "array",
          "maxItems": 1000,
          "items": {
           "$ref": "#/components/schemas/WatchKey"
          },
          "description": "with addresses, at most 1,000 keys in all (422 over it)"
         },
         "addresses": {
          "type": [
           "array",
           "null"
          ],
          "maxItems": 1000,
          "items": {
           "$ref": "#/components/schemas/OwnAddress"
          }
         },
         "contextual_routes": {
          "type": [
           "array",
           "null"
          ],
          "maxItems": 1000,
          "items": {
           "$ref": "#/components/schemas/ContextualRoute"
          }
         },
         "app": {
          "anyOf": [
           {
            "$ref": "#/components/schemas/AppID"
           },
           {
            "type": "null"
           }
          ]
         },
         "environment": {
          "enum": [
           "production",
           "sandbox",
           null
          ]
         },
         "device_id": {
          "type": [
           "string",
           "null"
          ],
          "minLength": 1,
          "maxLength": 256,
          "pattern": "^[^\\u0000-\\u001F\\u007F]+$"
         }
        },
        "required": [
         "watched_addresses"
        ]
       },
       "Registration": {
        "description": "ios and android give device_token; web gives subscription (device_token, if given too, is its endpoint)",
        "oneOf": [
         {
          "allOf": [
           {
            "$ref": "#/components/schemas/RegistrationCommon"
           },
           {
            "type": "object",
            "properties": {
             "platform": {
              "const": "ios"
             },
             "device_token": {
              "$ref": "#/components/schemas/APNsToken"
             },
             "token_kind": {
              "anyOf": [
               {
                "const": "token"
               },
               {
                "type": "null"
               }
              ]
             }
            },
            "required": [
             "platform",
             "device_token"
            ]
           }
          ]
         },
         {
          "allOf": [
           {
            "$ref": "#/components/schemas/RegistrationCommon"
           },
           {
            "type": "object",
            "properties": {
             "platform": {
              "const": "android"
             },
             "device_token": {
              "$ref": "#/components/schemas/FCMToken"
             },
             "token_kind": {
              "anyOf": [
               {
                "const": "token"
               },
               {
                "type": "null"
               }
              ]
             }
            },
            "required": [
             "platform",
             "device_token"
            ]
           }
          ]
         },
         {
          "allOf": [
           {
            "$ref": "#/components/schemas/RegistrationCommon"
           },
           {
            "type": "object",
            "properties": {
             "platform": {
              "const": "android"
             },
             "device_token": {
              "$ref": "#/components/schemas/InstallationID"
             },
             "token_kind": {
              "const": "fid"
             }
            },
            "required": [
             "platform",
             "token_kind",
             "device_token"
            ]
           }
          ]
         },
         {
          "allOf": [
           {
            "$ref": "#/components/schemas/RegistrationCommon"
           },
           {
            "type": "object",
            "properties": {
             "platform": {
              "const": "web"
             },
             "subscription": {
              "$ref": "#/components/schemas/WebPushSubscription"
             },
             "token_kind": {
              "anyOf": [
               {
                "const": "token"
               },
               {
                "type": "null"
               }
              ]
             },
             "device_token": {
              "type": [
               "string",
               "null"
              ],
              "description": "the subscription's endpoint (422 otherwise)"
             }
            },
            "required": [
             "platform",
             "subscription"
            ]
           }
          ]
         }
        ]
       },
       "WatchSetUpdate": {
        "description": "the device by device_token, or a web subscription by its endpoint",
        "anyOf": [
         {
          "type": "object",
          "properties": {
           "watched_addresses": {
            "type": "array",
            "maxItems": 1000,
            "items": {
             "$ref": "#/components/schemas/WatchKey"
            },
            "description": "with addresses, at most 1,000 keys in all (422 over it)"
           },
           "addresses": {
            "type": [
             "array",
             "null"
            ],
            "maxItems": 1000,
            "items": {
             "$ref": "#/components/schemas/OwnAddress"
            }
           },
           "contextual_routes": {
            "type": [
             "array",
             "null"
            ],
            "maxItems": 1000,
            "items": {
             "$ref": "#/components/schemas/ContextualRoute"
            }
           },
           "app": {
            "anyOf": [
             {
              "$ref": "#/components/schemas/AppID"
             },
             {
              "type": "null"
             }
            ]
           },
           "device_token": {
            "type": "string"
           },
           "subscription": {
            "type": [
             "object",
             "null"
            ],
            "properties": {
             "endpoint": {
              "type": [
               "string",
               "null"
              ]
             }
            }
           }
          },
          "required": [
           "device_token",
           "watched_addresses"
          ]
         },
         {
          "type": "object",
          "properties": {
           "watched_addresses": {
            "type": "array",
            "maxItems": 1000,
            "items": {
             "$ref": "#/components/schemas/WatchKey"
            },
            "description": "with addresses, at most 1,000 keys in all (422 over it)"
           },
           "addresses": {
            "type": [
             "array",
             "null"
            ],
            "maxItems": 1000,
            "items": {
             "$ref": "#/components/schemas/OwnAddress"
            }
           },
           "contextual_routes": {
            "type": [
             "array",
             "null"
            ],
            "maxItems": 1000,
            "items": {
             "$ref": "#/components/schemas/ContextualRoute"
            }
           },
           "app": {
            "anyOf": [
             {
              "$ref": "#/components/schemas/AppID"
             },
             {
              "type": "null"
             }
            ]
           },
           "device_token": {
            "type": [
             "string",
             "null"
            ]
           },
           "subscription": {
            "type": "object",
            "properties": {
             "endpoint": {
              "type": "string"
             }
            },
            "required": [
             "endpoint"
            ]
           }
          },
          "required": [
           "subscription",
           "watched_addresses"
          ]
         }
        ]
       },
       "EventOptions": {
        "type": "object",
        "properties": {
         "app": {
          "anyOf": [
           {
            "$ref": "#/components/schemas/AppID"
           },
           {
            "type": "null"
           }
          ]
         },
         "targets": {
          "type": [
           "object",
           "null"
          ],
          "properties": {
           "keys": {
            "type": [
             "array",
             "null"
            ],
            "maxItems": 1000,
            "items": {
             "$ref": "#/components/schemas/WatchKey"
            }
           },
           "device_ids": {
            "type": [
             "array",
             "null"
            ],
            "maxItems": 1000,
            "items": {
             "type": "string",
             "minLength": 1,
             "maxLength": 256
            }
           },
           "tokens": {
            "type": [
             "array",
             "null"
            ],
            "maxItems": 1000,
            "items": {
             "type": "string",
             "minLength": 1,
             "maxLength": 256
            }
           }
          }
         },
         "exclude_device_ids": {
          "type": [
           "array",
           "null"
          ],
          "maxItems": 1000,
          "items": {
           "type": "string",
           "minLength": 1,
           "maxLength": 256
          }
         },
         "priority": {
          "enum": [
           10,
           5,
           1,
           null
          ],
          "description": "a template's background pushes take 5 only (422 otherwise)"
         },
         "expiration": {
          "type": [
           "integer",
           "null"
          ],
          "minimum": -9223372036854775808,
          "maximum": 9223372036854775807,
          "description": "unix seconds; default now + 24 h; kept at most 30 days; one already past (0 included, as Apple reads apns-expiration 0) is a now-or-never push, tried for a minute"
         },
         "collapse_id": {
          "type": [
           "string",
           "null"
          ],
          "minLength": 1,
          "maxLength": 64,
          "pattern": "^[ -~]+$",
          "description": "printable ASCII: it travels as a header (apns-collapse-id, FCM's collapse_key)"
         },
         "thread_id": {
          "type": [
           "string",
           "null"
          ],
          "minLength": 1,
          "maxLength": 256,
          "description": "groups alerts: an alert push only"
         }
        }
       },
       "KasiaFields": {
        "type": "object",
        "properties": {
         "tx_id": {
          "type": "string",
          "pattern": "^[0-9a-f]{64}$"
         },
         "sender": {
          "$ref": "#/components/schemas/KaspaAddress"
         },
         "recipient": {
          "anyOf": [
           {
            "$ref": "#/components/schemas/KaspaAddress"
           },
           {
            "type": "null"
           }
          ]
         },
         "alias": {
          "type": [
           "string",
           "null"
          ]
         },
         "payload": {
          "type": [
           "string",
           "null"
          ],
          "pattern": "^([0-9a-f]{2})*$",
          "description": "the lowercase hex of the whole transaction payload"
         },
         "timestamp": {
          "type": "integer",
          "minimum": -9223372036854775808,
          "maximum": 9223372036854775807
         },
         "daa_score": {
          "type": "integer",
          "minimum": 0,
          "maximum": 18446744073709551615
         },
         "amount": {
          "type": [
           "integer",
           "null"
          ],
          "minimum": 0,
          "maximum": 18446744073709551615,
          "description": "sompi"
         }
        },
        "required": [
         "tx_id",
         "sender",
         "timestamp",
         "daa_score"
        ]
       },
       "VisibleAPS": {
        "description": "an aps dictionary that shows something: an alert, a badge or a sound",
        "type": "object",
        "anyOf": [
         {
          "required": [
           "alert"
          ]
         },
         {
          "required": [
           "badge"
          ]
         },
         {
          "required": [
           "sound"
          ]
         }
        ]
       },
       "SilentAPS": {
        "description": "a background push's aps dictionary: content-available 1, and no alert, badge or sound",
        "type": "object",
        "properties": {
         "content-available": {
          "const": 1
         },
         "alert": false,
         "badge": false,
         "sound": false
        },
        "required": [
         "content-available"
        ]
       },
       "Event": {
        "description": "one per template; kasia.handshake and kasia.payment without targets route by their recipient",
        "oneOf": [
         {
          "allOf": [
           {
            "$ref": "#/components/schemas/EventOptions"
           },
           {
            "type": "object",
            "properties": {
             "template": {
              "const": "custom"
             },
             "targets": {
              "type": "object"
             },
             "fields": {
              "type": "object",
              "properties": {
               "aps": {
                "type": "object",
                "description": "the APNs aps dictionary: an alert push (the default) shows an alert, badge or sound; a background push is content-available 1 alone; 4 KiB (5 KiB VoIP) in all (413 over)"
               },
               "data": {
                "type": [
                 "object",
                 "null"
                ],
                "properties": {
                 "aps": false
                },
                "description": "top-level keys beside aps"
               },
               "push_type": {
                "enum": [
                 "alert",
                 "background",
                 "voip",
                 "mdm",
                 "widgets",
                 "controls",
                 null
                ],
                "description": "Apple's apns-push-type; the types whose topic needs a suffix besides .voip (location, complication, fileprovider, liveactivity, pushtotalk) are refused (422): pushes go to the app's topic"
               },
               "fcm": {
                "type": [
                 "object",
                 "null"
                ],
                "properties": {
                 "data": {
                  "type": "object",
                  "additionalProperties": {
                   "type": "string"
                  },
                  "propertyNames": {
                   "not": {
                    "pattern": "^([Gg][Oo][Oo][Gg][Ll][Ee]|[Gg][Cc][Mm])|^([Ff][Rr][Oo][Mm]|[Nn][Oo][Tt][Ii][Ff][Ii][Cc][Aa][Tt][Ii][Oo][Nn]|[Mm][Ee][Ss][Ss][Aa][Gg][Ee]_[Tt][Yy][Pp][Ee]|[Cc][Oo][Ll][Ll][Aa][Pp][Ss][Ee]_[Kk][Ee][Yy])$"
                   }
                  }
                 }
                },
                "required": [
                 "data"
                ],
                "additionalProperties": false,
                "description": "the FCM data map Android devices get: strings, none of FCM's reserved keys, 4,096 bytes (413 over)"
               }
              },
              "required": [
               "aps"
              ],
              "allOf": [
               {
                "if": {
                 "properties": {
                  "push_type": {
                   "const": "alert"
                  }
                 },
                 "required": [
                  "push_type"
                 ]
                },
                "then": {
                 "properties": {
                  "aps": {
                   "$ref": "#/components/schemas/VisibleAPS"
                  }
                 }
                }
               },
               {
                "if": {
                 "properties": {
                  "push_type": {
                   "const": "background"
                  }
                 },
                 "required": [
                  "push_type"
                 ]
                },
                "then": {
                 "properties": {
                  "aps": {
                   "$ref": "#/components/schemas/SilentAPS"
                  }
                 }
                }
               },
               {
                "if": {
                 "properties": {
                  "push_type": {
                   "type": "null"
                  }
                 }
                },
                "then": {
                 "properties": {
                  "aps": {
                   "anyOf": [
                    {
                     "$ref": "#/components/schemas/VisibleAPS"
                    },
                    {
                     "$ref": "#/components/schemas/SilentAPS"
                    }
                   ]
                  }
                 }
                }
               }
              ]
             }
            },
            "if": {
             "properties": {
              "fields": {
               "anyOf": [
                {
                 "properties": {
                  "push_type": {
                   "const": "background"
                  }
                 },
                 "required": [
                  "push_type"
                 ]
                },
                {
                 "properties": {
                  "push_type": {
                   "type": "null"
                  },
                  "aps": {
                   "$ref": "#/components/schemas/SilentAPS"
                  }
                 }
                }
               ]
              }
             }
            },
            "then": {
             "properties": {
              "priority": {
               "enum": [
                5,
                null
               ],
               "description": "a background push: 5 only"
              }
             }
            },
            "allOf": [
             {
              "if": {
               "properties": {
                "thread_id": {
                 "type": "string"
                }
               },
               "required": [
                "thread_id"
               ]
              },
              "then": {
               "properties": {
                "fields": {
                 "description": "thread_id groups alerts: an alert push only",
                 "anyOf": [
                  {
                   "properties": {
                    "push_type": {
                     "const": "alert"
                    }
                   },
                   "required": [
                    "push_type"
                   ]
                  },
                  {
                   "properties": {
                    "push_type": {
                     "type": "null"
                    },
                    "aps": {
                     "$ref": "#/components/schemas/VisibleAPS"
                    }
                   }
                  }
                 ]
                }
               }
              }
             }
            ],
            "required": [
             "template",
             "fields",
             "targets"
            ]
           }
          ]
         },
         {
          "allOf": [
           {
            "$ref": "#/components/schemas/EventOptions"
           },
           {
            "type": "object",
            "properties": {
             "template": {
              "const": "kasia.handshake"
             },
             "fields": {
              "$ref": "#/components/schemas/KasiaFields"
             }
            },
            "required": [
             "template",
             "fields"
            ],
            "if": {
             "properties": {
              "targets": {
               "type": "null"
              }
             }
            },
            "then": {
             "properties": {
              "fields": {
               "properties": {
                "recipient": {
                 "$ref": "#/components/schemas/KaspaAddress"
                }
               },
               "required": [
                "recipient"
               ]
              }
             }
            }
           }
          ]
         },
         {
          "allOf": [
           {
            "$ref": "#/components/schemas/EventOptions"
           },
           {
            "type": "object",
            "properties": {
             "template": {
              "const": "kasia.contextual_message"
             },
             "fields": {
              "$ref": "#/components/schemas/KasiaFields"
             }
            },
            "required": [
             "template",
             "fields"
            ]
           }
          ]
         },
         {
          "allOf": [
           {
            "$ref": "#/components/schemas/EventOptions"
           },
           {
            "type": "object",
            "properties": {
             "template": {
              "const": "kasia.payment"
             },
             "fields": {
              "$ref": "#/components/schemas/KasiaFields"
             }
            },
            "required": [
             "template",
             "fields"
            ],
            "if": {
             "properties": {
              "targets": {
               "type": "null"
              }
             }
            },
            "then": {
             "properties": {
              "fields": {
               "properties": {
                "recipient": {
                 "$ref": "#/components/schemas/KaspaAddress"
                }
               },
               "required": [
                "recipient"
               ]
              }
             }
            }
           }
          ]
         },
         {
          "allOf": [
           {
            "$ref": "#/components/schemas/EventOptions"
           },
           {
            "type": "object",
            "properties": {
             "template": {
              "const": "conversation.silent"
             },
             "targets": {
              "type": "object"
             },
             "priority": {
              "enum": [
               5,
               null
              ],
              "description": "a background push: 5 only"
             },
             "thread_id": {
              "type": "null",
              "description": "a background push has no thread"
             },
             "fields": {
              "type": "object",
              "properties": {
               "conversation_id": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1024
               }
              },
              "required": [
               "conversation_id"
              ]
             }
            },
            "required": [
             "template",
             "fields",
             "targets"
            ]
           }
          ]
         },
         {
          "allOf": [
           {
            "$ref": "#/components/schemas/EventOptions"
           },
           {
            "type": "object",
            "properties": {
             "template": {
              "const": "session.message"
             },
             "fields": {
              "type": "object",
              "properties": {
               "session_id": {
                "$ref": "#/components/schemas/Identifier"
               },
               "message_id": {
                "type": "string",
                "minLength": 1,
                "maxLength": 256
               },
               "timestamp": {
                "anyOf": [
                 {
                  "type": "integer",
                  "minimum": -9223372036854775808,
                  "maximum": 9223372036854775807
                 },
                 {
                  "type": "string",
                  "format": "date-time"
                 }
                ],
                "description": "unix seconds or an RFC 3339 date (before 1970: negative seconds)"
               },
               "encrypted": {
                "type": [
                 "boolean",
                 "null"
                ]
               },
               "has_attachment": {
                "type": [
                 "boolean",
                 "null"
                ]
               }
              },
              "required": [
               "session_id",
               "message_id",
               "timestamp"
              ]
             }
            },
            "required": [
             "template",
             "fields"
            ]
           }
          ]
         },
         {
          "allOf": [
           {
            "$ref": "#/components/schemas/EventOptions"
           },
           {
            "type": "object",
            "properties": {
             "template": {
              "const": "agent.event"
             },
             "fields": {
              "type": "object",
              "properties": {
               "hook_event_name": {
                "enum": [
                 "Stop",
                 "Notification"
                ]
               },
               "notification_type": {
                "type": [
                 "string",
                 "null"
                ],
                "maxLength": 4096
               },
               "tool_name": {
                "type": [
                 "string",
                 "null"
                ],
                "maxLength": 4096
               },
               "device_name": {
                "type": "string",
                "minLength": 1,
                "maxLength": 256
               },
               "session_id": {
                "type": "string",
                "minLength": 1,
                "maxLength": 256
               },
               "message": {
                "type": [
                 "string",
                 "null"
                ],
                "maxLength": 4096
               }
              },
              "required": [
               "hook_event_name",
               "device_name",
               "session_id"
              ]
             }
            },
            "required": [
             "template",
             "fields"
            ]
           }
          ]
         }
        ]
       }
      }
     }
    }
    """#
}
