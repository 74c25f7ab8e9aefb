import Foundation
import HeraldCore
public import HeraldDelivery
import HeraldMatrix
import HeraldPushCore
public import Hummingbird

/// The Matrix Push Gateway API: `POST /_matrix/push/v1/notify` answers `{"rejected": [pushkeys]}`
/// once the pushes are committed (never after a push service), and `GET` on the same path
/// answers UnifiedPush's gateway discovery. Like Sygnal's, the route takes no credentials: a
/// homeserver has none to give, and a pushkey is the capability to push to its device.
public struct MatrixPushAPI: Sendable {
    public let notifier: MatrixNotifier
    public let configuration: APIConfiguration

    public init(notifier: MatrixNotifier, configuration: APIConfiguration) {
        self.notifier = notifier
        self.configuration = configuration
    }

    public static let path = "/_matrix/push/v1/notify"

    public func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.post(RouterPath(Self.path)) { request, context in
            let json = try await JSONBody.parse(request, limit: configuration.maximumBodySize)
            let body = try JSONBody.read { () throws(JSONFieldError) in try MatrixNotifyRequest(json: json) }
            guard let notification = body.notification else { throw APIError.missing("notification") }
            let outcome = try await notifier.notify(notification, requestID: context.logger.requestID)
            return RegistrationAPI.json(.object([.init("rejected", .array(outcome.rejected.map(JSONValue.string)))]))
        }
        router.get(RouterPath(Self.path)) { _, _ in
            RegistrationAPI.json(.object([.init("unifiedpush", .object([.init("gateway", .string("matrix"))]))]))
        }
    }
}
