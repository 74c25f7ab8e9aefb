import HeraldAPNsCore
import HeraldCore
import HeraldPushCore
import Testing

@Suite("Shrinking a push after 413")
struct RenderedPushTests {
    static func push(_ json: String) -> RenderedPush {
        RenderedPush(pushType: .alert, priority: .immediate, collapseID: "c", payload: Array(json.utf8))
    }

    @Test("what is dropped or cut, in order; keys come out sorted", arguments: [
        // The Kasia inline payload goes first (the app fetches the transaction when it is null).
        (#"{"aps":{"alert":{"title":"t","body":"From kaspa:qp...70xmfj"}},"kasia":{"txId":"ab","payload":"cafe"}}"#,
         #"{"aps":{"alert":{"body":"From kaspa:qp...70xmfj","title":"t"}},"kasia":{"payload":null,"txId":"ab"}}"#),
        // Then the alert body, to half, ending in "…".
        (#"{"aps":{"alert":{"title":"t","body":"0123456789abcdefghijklmnopqrstuvwxyz0123"}},"kasia":{"payload":null}}"#,
         #"{"aps":{"alert":{"body":"0123456789abcdefghij…","title":"t"}},"kasia":{"payload":null}}"#),
        // A string alert.
        (#"{"aps":{"alert":"0123456789abcdefghijklmnopqrstuvwxyz0123"},"x":1}"#,
         #"{"aps":{"alert":"0123456789abcdefghij…"},"x":1}"#),
    ])
    func shrinks(input: String, output: String) throws {
        let smaller = try #require(Self.push(input).shrunk())
        #expect(String(decoding: smaller.payload, as: UTF8.self) == output)
        #expect(smaller.payload.count < input.utf8.count)
        #expect(smaller.collapseID == "c" && smaller.pushType == .alert)
    }

    @Test("nothing left to drop: no smaller push", arguments: [
        #"{"aps":{"alert":{"title":"t","body":"short body"}},"kasia":{"payload":null}}"#,
        #"{"aps":{"content-available":1},"c":"0123456789abcdef0123456789abcdef"}"#,
        #"not json"#,
        #"[1,2]"#,
    ])
    func cannotShrink(input: String) {
        #expect(Self.push(input).shrunk() == nil)
    }
}
