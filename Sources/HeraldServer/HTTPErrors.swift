public import Foundation
import HeraldCore
import HeraldPushCore
public import HeraldDelivery
public import HTTPTypes
public import Hummingbird

/// Refusals go out as `{"error": {"code": …, "message": …, "field": …}}` with their status.
extension APIError: HTTPResponseError {
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var error: [String: JSONValue] = ["code": .string(code), "message": .string(message)]
        if let field { error["field"] = .string(field) }
        var response = RegistrationAPI.json(["error": .sortedObject(error)], status: status)
        if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
        return response
    }
}

/// The domain's refusals, met by middleware inside the error envelope (the HTTP metrics count
/// them by the status they will have).
extension Refusal: HTTPResponseError {
    public var status: HTTPResponse.Status { APIError.status(of: kind) }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try APIError(self).response(from: request, context: context)
    }
}

/// Reading JSON bodies with errors that name the field.
enum JSONBody {
    /// Decodes `T` from a body of at most `limit` bytes.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request, limit: Int) async throws -> T {
        let buffer = try await collect(request, limit: limit)
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError(decoding: error)
        }
    }

    /// A JSON body of at most `limit` bytes (413 over it, 415 when it does not say it is JSON:
    /// a form a page on another site posts carries no `application/json`, so a browser cannot
    /// send one without asking first).
    static func collect(_ request: Request, limit: Int) async throws -> ByteBuffer {
        // A length the head already says is over the limit is refused at once, and the
        // connection closes (ConnectionGuardHandler) instead of waiting for the body.
        if let text = request.headers.value(.contentLength), let length = Int(text), length > limit {
            throw APIError(.contentTooLarge, code: "body_too_large", message: "the body is limited to \(limit) bytes")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch {
            throw APIError(.contentTooLarge, code: "body_too_large", message: "the body is limited to \(limit) bytes")
        }
        guard let type = request.headers.value(.contentType), type.hasPrefix(ignoringASCIICase: "application/json") else {
            throw APIError(.unsupportedMediaType, code: "unsupported_media_type", message: "send application/json (Content-Type)")
        }
        return buffer
    }

    /// A body parsed by `JSONValue(parsing:)` (no Foundation decoder): 400 `invalid_json` naming `body` when it is not JSON.
    static func parse(_ request: Request, limit: Int) async throws -> JSONValue {
        let buffer = try await collect(request, limit: limit)
        let parsed = buffer.withUnsafeReadableBytes { raw in Result { () throws(JSONParseError) in try JSONValue(parsing: raw) } }
        do {
            return try parsed.get()
        } catch {
            throw APIError(.badRequest, code: "invalid_json", message: "the body is not valid JSON (\(error))", field: "body")
        }
    }

    /// Reads a parsed body into a route's type: a field refused becomes 400 `invalid_field`
    /// naming it, a body that is not an object 400 `invalid_json`.
    static func read<T>(_ reader: () throws(JSONFieldError) -> T) throws(APIError) -> T {
        do {
            return try reader()
        } catch {
            throw APIError(error)
        }
    }
}

/// Which app a request serves, from its headers and bearer token.
extension AppDirectory {
    /// Checks the request's bearer token against `app`'s registration policy, and says which
    /// identities the request may act for.
    /// - Throws: 401 without the key or a valid token.
    @discardableResult
    public func authorizeRegistration(_ request: Request, for app: AppSettings, now: Date) async throws -> RegistrationGrant {
        switch app.registration {
        case .open, .wallet:
            return .anyIdentity
        case .bearer(let keys):
            guard let key = Self.bearer(request), SecretComparison.matches(key, anyOf: keys) else {
                throw APIError(.unauthorized, code: "unauthorized", message: "a registration key of app \(app.id) is required as a bearer token")
            }
            return .anyIdentity
        case .signed(let keys):
            guard let token = Self.bearer(request) else {
                throw APIError(.unauthorized, code: "unauthorized", message: "a registration token of app \(app.id) is required as a bearer token")
            }
            do {
                let claims = try await keys.verify(token, app: app.id, now: now)
                return .identity(claims.subject, keys: claims.keys)
            } catch {
                throw APIError(.unauthorized, code: "unauthorized", message: "the registration token is refused: \(error)")
            }
        }
    }

    /// The request's publisher key. - Throws: 401 when it carries none of any app's.
    public func publisherKey(_ request: Request) throws -> String {
        guard let key = Self.bearer(request) else {
            throw APIError(.unauthorized, code: "unauthorized", message: "a publisher key is required as a bearer token")
        }
        guard apps.contains(where: { $0.isPublisherKey(key) }) else {
            let configured = apps.contains { !$0.publishKeys.isEmpty }
            throw APIError(
                .unauthorized, code: "unauthorized",
                message: configured ? "this bearer token is not a publisher key of any app" : "publishing is off: no app has a publisher key (HERALD_PUBLISH_KEYS)")
        }
        return key
    }

    /// The app a compatibility route serves: the `X-Herald-App` header, else the `/apps/<id>`
    /// prefix of the path, else the only app. Each one given must name an app, and both the same.
    public func compatibilityApp(_ request: Request, prefix: String?) throws -> AppSettings {
        let fromPath = try prefix.map { try resolve($0, field: "app") }
        if let header = request.headers[Self.appHeader] {
            let app = try resolve(header, field: "X-Herald-App")
            guard fromPath == nil || fromPath?.id == app.id else {
                throw APIError.unprocessable("X-Herald-App", "X-Herald-App names another app than the path's /apps/\(prefix ?? "")")
            }
            return app
        }
        if let fromPath { return fromPath }
        guard apps.count == 1 else {
            throw APIError(.badRequest, code: "missing_field", message: "name the app: X-Herald-App or /apps/<id>/…", field: "X-Herald-App")
        }
        return apps[0]
    }

    /// The app a compatibility registration route serves, once its registration policy admits
    /// the request, and what the request may claim.
    public func registeringApp(_ request: Request, prefix: String?, now: Date) async throws -> (AppSettings, RegistrationGrant) {
        let app = try compatibilityApp(request, prefix: prefix)
        return (app, try await authorizeRegistration(request, for: app, now: now))
    }

    static let appHeader = HTTPField.Name("X-Herald-App")!

    static func bearer(_ request: Request) -> String? {
        guard let header = request.headers.value(.authorization), header.hasPrefix(ignoringASCIICase: "bearer ") else { return nil }
        return String(header.dropFirst("bearer ".count))
    }
}
