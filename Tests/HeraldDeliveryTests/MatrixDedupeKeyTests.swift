@testable import HeraldDelivery
import Testing

/// A Matrix notify's dedupe key is stored with its event: a Synapse retry that straddles an upgrade
/// is recognised only if the key's bytes never change. Pinned against Python's hashlib.
@Suite("Matrix dedupe keys")
struct MatrixDedupeKeyTests {
    @Test("the key is \"matrix:\" and the lowercase hex SHA-256 of app, event id and token, each ended by a newline but the last", arguments: [
        ("im.app.ios", "$ev:example.org", "abcd1234", "matrix:e3ecf0a7f5e5f1130e51f6551caf684e24ec5d0816f8ba87f2dfacefe139389a"),
        ("app", "$é😀", "t", "matrix:02adfe4d507800f344ca19cdb63866700b77c662411d475df9117359684db129"),
    ])
    func pinned(app: String, eventID: String, token: String, key: String) {
        #expect(MatrixNotifier.dedupeKey(app: app, eventID: eventID, token: token) == key)
    }
}
