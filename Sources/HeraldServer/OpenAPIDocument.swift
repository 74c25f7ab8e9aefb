/// The OpenAPI 3.1 description of Herald's HTTP API, served at `GET /openapi.json`.
/// A test checks it lists exactly the routes the gateway serves.
public enum OpenAPIDocument {
    public static let json = #"""
    {
      "openapi": "3.1.0",
      "info": {
        "title": "Herald",
        "version": "0.1.0",
        "description": "Self-hosted push gateway for end-to-end-encrypted messaging apps. Errors are {\"error\": {\"code\", \"message\", \"field\"}}, the router's too: a documented path asked with another method answers 405 with Allow, an undocumented path 404. Bodies are limited to 64 KiB, /v1/events:batch to 8 MiB (1,000 events of the largest push fit twice over); both limits are configurable (HERALD_MAX_BODY_BYTES, HERALD_MAX_BATCH_BODY_BYTES) and a larger body is a 413 body_too_large. Every request may carry X-Request-ID (1-128 visible ASCII characters; else Herald makes one); every answer carries the id, which Herald's log lines for the request name as request_id."
      },
      "paths": {
        "/v1/push/register": {
          "post": {
            "summary": "Register a device and replace its watch set",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Registration"}}}},
            "responses": {
              "200": {"description": "Registered", "content": {"application/json": {"schema": {"type": "object", "properties": {"registered": {"type": "boolean"}, "watched_addresses": {"type": "integer"}}}}}},
              "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"},
              "413": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/v1/push/update": {
          "put": {
            "summary": "Replace the watch set of a registered device",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/WatchSetUpdate"}}}},
            "responses": {
              "200": {"description": "Updated", "content": {"application/json": {"schema": {"type": "object", "properties": {"updated": {"type": "boolean"}, "watched_addresses": {"type": "integer"}}}}}},
              "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/v1/push/unregister": {
          "delete": {
            "summary": "Remove a device (idempotent)",
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["device_token"], "properties": {"device_token": {"type": "string"}, "app": {"type": "string"}}}}}},
            "responses": {
              "200": {"description": "Done", "content": {"application/json": {"schema": {"type": "object", "properties": {"unregistered": {"type": "boolean"}}}}}},
              "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/v1/push/status": {
          "get": {
            "summary": "A device's registration",
            "parameters": [
              {"name": "device_token", "in": "query", "required": false, "schema": {"type": "string"}, "description": "the token; or the X-Device-Token header, which stays out of access logs"},
              {"name": "X-Device-Token", "in": "header", "required": false, "schema": {"type": "string"}},
              {"name": "app", "in": "query", "required": false, "schema": {"type": "string"}}
            ],
            "responses": {
              "200": {"description": "Status", "content": {"application/json": {"schema": {"type": "object", "properties": {"registered": {"type": "boolean"}, "watched_addresses": {"type": "array", "items": {"type": "string"}}, "last_seen": {"type": ["integer", "null"], "description": "unix seconds"}}}}}},
              "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/v1/push/vapid-public-key": {
          "get": {
            "summary": "The app's VAPID application server key, for a web app's pushManager.subscribe",
            "parameters": [{"name": "app", "in": "query", "required": false, "schema": {"type": "string"}}],
            "responses": {
              "200": {"description": "The key", "content": {"application/json": {"schema": {"type": "object", "properties": {"app": {"type": "string"}, "public_key": {"type": "string", "description": "base64url of the 65-byte P-256 point"}}}}}},
              "404": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/api/devices/token": {
          "post": {
            "summary": "SafeWhisper: register the device's APNs token; it becomes the device's only token, and moves here from another device id",
            "parameters": [{"name": "X-Device-ID", "in": "header", "required": true, "schema": {"type": "string"}}, {"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["apnsToken"], "properties": {"apnsToken": {"type": "string"}}}}}},
            "responses": {
              "201": {"description": "Registered", "content": {"application/json": {"schema": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}}}}},
              "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/apps/{app}/api/devices/token": {
          "post": {
            "summary": "SafeWhisper: register the device's APNs token; it becomes the device's only token, and moves here from another device id",
            "parameters": [{"name": "app", "in": "path", "required": true, "schema": {"type": "string"}}, {"name": "X-Device-ID", "in": "header", "required": true, "schema": {"type": "string"}}, {"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["apnsToken"], "properties": {"apnsToken": {"type": "string"}}}}}},
            "responses": {
              "201": {"description": "Registered", "content": {"application/json": {"schema": {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}}}}},
              "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/api/devices/logout": {
          "post": {
            "summary": "SafeWhisper: log the device out, removing all its tokens",
            "parameters": [{"name": "X-Device-ID", "in": "header", "required": true, "schema": {"type": "string"}}, {"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}],
            "responses": {
              "200": {"description": "Logged out", "content": {"application/json": {"schema": {"type": "object", "properties": {"removed": {"type": "integer"}}}}}},
              "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/apps/{app}/api/devices/logout": {
          "post": {
            "summary": "SafeWhisper: log the device out, removing all its tokens",
            "parameters": [{"name": "app", "in": "path", "required": true, "schema": {"type": "string"}}, {"name": "X-Device-ID", "in": "header", "required": true, "schema": {"type": "string"}}, {"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}],
            "responses": {
              "200": {"description": "Logged out", "content": {"application/json": {"schema": {"type": "object", "properties": {"removed": {"type": "integer"}}}}}},
              "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/apns/register": {"post": {"summary": "GhostTalk: register a device for a session (watch key session:<id>)", "parameters": [{"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}], "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["session_id", "device_token"], "properties": {"session_id": {"type": "string"}, "device_token": {"type": "string"}}}}}}, "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"success": {"type": "boolean"}, "message": {"type": "string"}}}}}}, "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}}}},
        "/apps/{app}/apns/register": {"post": {"summary": "GhostTalk: register a device for a session (watch key session:<id>)", "parameters": [{"name": "app", "in": "path", "required": true, "schema": {"type": "string"}}, {"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}], "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["session_id", "device_token"], "properties": {"session_id": {"type": "string"}, "device_token": {"type": "string"}}}}}}, "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"success": {"type": "boolean"}, "message": {"type": "string"}}}}}}, "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}}}},
        "/apns/unregister": {"post": {"summary": "GhostTalk: remove the devices registered for a session", "parameters": [{"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}], "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["session_id"], "properties": {"session_id": {"type": "string"}}}}}}, "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"success": {"type": "boolean"}, "message": {"type": "string"}}}}}}, "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}}}},
        "/apps/{app}/apns/unregister": {"post": {"summary": "GhostTalk: remove the devices registered for a session", "parameters": [{"name": "app", "in": "path", "required": true, "schema": {"type": "string"}}, {"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}], "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["session_id"], "properties": {"session_id": {"type": "string"}}}}}}, "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"success": {"type": "boolean"}, "message": {"type": "string"}}}}}}, "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}}}},
        "/apns/stats": {"get": {"summary": "GhostTalk: registrations, production mode and topic of the app", "parameters": [{"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"total_registrations": {"type": "integer"}, "production_mode": {"type": "boolean"}, "topic": {"type": "string"}}}}}}, "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}}}},
        "/apps/{app}/apns/stats": {"get": {"summary": "GhostTalk: registrations, production mode and topic of the app", "parameters": [{"name": "app", "in": "path", "required": true, "schema": {"type": "string"}}, {"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}], "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"total_registrations": {"type": "integer"}, "production_mode": {"type": "boolean"}, "topic": {"type": "string"}}}}}}, "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}}}},
        "/apns/send": {"post": {"summary": "GhostTalk, testing only: a session.message push to a session; 404 unless enabled, always behind a publisher key", "parameters": [{"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}], "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["session_id", "payload"], "properties": {"session_id": {"type": "string"}, "payload": {"type": "object"}}}}}}, "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"success": {"type": "boolean"}, "message": {"type": "string"}, "deliveries": {"type": "integer"}}}}}}, "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}},
        "/apps/{app}/apns/send": {"post": {"summary": "GhostTalk, testing only: a session.message push to a session; 404 unless enabled, always behind a publisher key", "parameters": [{"name": "app", "in": "path", "required": true, "schema": {"type": "string"}}, {"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}], "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["session_id", "payload"], "properties": {"session_id": {"type": "string"}, "payload": {"type": "object"}}}}}}, "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"success": {"type": "boolean"}, "message": {"type": "string"}, "deliveries": {"type": "integer"}}}}}}, "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}}}},
        "/api/v1/push/register": {"post": {"summary": "Claudiator: register a device, behind the app key as a bearer", "parameters": [{"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}], "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["platform", "token"], "properties": {"platform": {"enum": ["ios", "android"]}, "token": {"type": "string"}}}}}}, "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"registered": {"type": "boolean"}}}}}}, "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}}}},
        "/apps/{app}/api/v1/push/register": {"post": {"summary": "Claudiator: register a device, behind the app key as a bearer", "parameters": [{"name": "app", "in": "path", "required": true, "schema": {"type": "string"}}, {"name": "X-Herald-App", "in": "header", "required": false, "schema": {"type": "string"}}], "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["platform", "token"], "properties": {"platform": {"enum": ["ios", "android"]}, "token": {"type": "string"}}}}}}, "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"type": "object", "properties": {"registered": {"type": "boolean"}}}}}}, "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}}}},
        "/v1/events": {
          "post": {
            "summary": "Publish an event (answers once it is durable; never waits on APNs)",
            "security": [{"publisherKey": []}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Event"}}}},
            "responses": {
              "202": {"description": "Accepted", "content": {"application/json": {"schema": {"type": "object", "properties": {"event_id": {"type": "string"}, "deliveries": {"type": "integer"}, "unknown_tokens": {"type": "array", "items": {"type": "string"}}}}}}},
              "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/v1/events:batch": {
          "post": {
            "summary": "Publish up to 1,000 events, all or nothing",
            "security": [{"publisherKey": []}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["events"], "properties": {"events": {"type": "array", "minItems": 1, "maxItems": 1000, "items": {"$ref": "#/components/schemas/Event"}}}}}}},
            "responses": {
              "202": {"description": "Accepted", "content": {"application/json": {"schema": {"type": "object", "properties": {"events": {"type": "array", "items": {"type": "object", "properties": {"event_id": {"type": "string"}, "deliveries": {"type": "integer"}}}}}}}}},
              "400": {"$ref": "#/components/responses/Error"}, "429": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}
            }
          }
        },
        "/healthz": {"get": {"summary": "Liveness", "responses": {"200": {"description": "Alive"}}}},
        "/readyz": {"get": {"summary": "Readiness: the store answers a cheap query and the built-in simulators in use listen; 503 not_ready names each failure", "responses": {"200": {"description": "Ready: what was checked, and what each app sends with per platform (credentials or simulator)", "content": {"application/json": {"schema": {"type": "object", "required": ["ready", "checked", "apps"], "properties": {"ready": {"type": "boolean"}, "checked": {"type": "array", "items": {"type": "string"}}, "apps": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": {"type": "string"}}}}}}}}, "503": {"$ref": "#/components/responses/Error"}}}},
        "/v1/stats": {"get": {"summary": "Registrations, deliveries by state and reason, queue depth, oldest pending age", "responses": {"200": {"description": "Stats"}}}},
        "/openapi.json": {"get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI 3.1"}}}},
        "/metrics": {"get": {"summary": "Prometheus text: events accepted, deliveries created, delivery attempts by outcome and reason, refused APNs credentials", "responses": {"200": {"description": "Prometheus exposition format"}}}}
      },
      "components": {
        "securitySchemes": {"publisherKey": {"type": "http", "scheme": "bearer"}},
        "responses": {
          "Error": {"description": "An error naming the field at fault", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        },
        "schemas": {
          "OwnAddress": {"description": "one of the device's own Kaspa addresses; under the wallet policy with its wallet's signature (Kaspa message signing, hex) of herald-register:<app>:<SHA-256 of the device token, hex>:<timestamp>", "oneOf": [
            {"type": "string"},
            {"type": "object", "required": ["address"], "properties": {"address": {"type": "string"}, "timestamp": {"type": "integer", "description": "unix seconds, within 10 minutes of now"}, "signature": {"type": "string", "description": "128 hex characters"}}}
          ]},
          "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "object", "required": ["code", "message"], "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "field": {"type": "string"}}}}},
          "ContextualRoute": {"type": "object", "required": ["peer_address"], "properties": {"peer_address": {"type": "string"}, "aliases": {"type": "array", "maxItems": 100, "items": {"type": "string"}}}},
          "WebPushSubscription": {
            "description": "a browser's PushSubscription.toJSON() (or a UnifiedPush distributor's endpoint and keys); the endpoint is the device's identity",
            "type": "object", "required": ["endpoint", "keys"],
            "properties": {
              "endpoint": {"type": "string", "maxLength": 1000, "description": "https; must resolve to public addresses"},
              "expirationTime": {"type": ["integer", "null"]},
              "keys": {"type": "object", "required": ["p256dh", "auth"], "properties": {"p256dh": {"type": "string", "description": "base64url, 65-byte uncompressed P-256 point"}, "auth": {"type": "string", "description": "base64url, 16 bytes"}}}
            }
          },
          "Registration": {
            "type": "object", "required": ["platform", "watched_addresses"],
            "description": "ios and android give device_token; web gives subscription (device_token, if given too, is its endpoint)",
            "properties": {
              "device_token": {"type": "string"}, "platform": {"enum": ["ios", "android", "web"]}, "token_kind": {"enum": ["token", "fid"]},
              "subscription": {"$ref": "#/components/schemas/WebPushSubscription"},
              "watched_addresses": {"type": "array", "maxItems": 1000, "items": {"type": "string", "description": "a Kaspa address, conv:<hash>, session:<id> or user:<id>"}},
              "addresses": {"type": "array", "items": {"$ref": "#/components/schemas/OwnAddress"}},
              "contextual_routes": {"type": "array", "items": {"$ref": "#/components/schemas/ContextualRoute"}},
              "environment": {"enum": ["production", "sandbox"]}, "app": {"type": "string"}, "device_id": {"type": "string"}
            }
          },
          "WatchSetUpdate": {
            "type": "object", "required": ["watched_addresses"],
            "description": "the device by device_token, or a web subscription by its endpoint",
            "properties": {
              "device_token": {"type": "string"}, "subscription": {"type": "object", "properties": {"endpoint": {"type": "string"}}}, "watched_addresses": {"type": "array", "items": {"type": "string"}},
              "addresses": {"type": "array", "items": {"$ref": "#/components/schemas/OwnAddress"}},
              "contextual_routes": {"type": "array", "items": {"$ref": "#/components/schemas/ContextualRoute"}}, "app": {"type": "string"}
            }
          },
          "Event": {
            "type": "object", "required": ["template", "fields"],
            "properties": {
              "app": {"type": "string"},
              "template": {"enum": ["custom", "kasia.handshake", "kasia.contextual_message", "kasia.payment", "conversation.silent", "session.message", "agent.event"]},
              "targets": {"type": "object", "properties": {"keys": {"type": "array", "items": {"type": "string"}}, "device_ids": {"type": "array", "items": {"type": "string"}}, "tokens": {"type": "array", "items": {"type": "string"}}}},
              "exclude_device_ids": {"type": "array", "items": {"type": "string"}},
              "fields": {"type": "object", "description": "custom: {aps, data?, push_type?}; kasia.*: {tx_id, sender, recipient?, alias?, payload?, timestamp, daa_score, amount?}"},
              "priority": {"enum": [10, 5, 1]}, "expiration": {"type": "integer", "description": "unix seconds; default now + 24 h"},
              "collapse_id": {"type": "string", "maxLength": 64}
            }
          }
        }
      }
    }
    """#
}
