import Foundation
import HeraldWebPushCore
import Testing

@Suite("herald vapid-keys")
struct VAPIDKeysCommandTests {
    @Test("writes a 0600 PEM whose public key is the printed application server key; never overwrites it")
    func makesAndKeepsKey() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-vapid-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (code, json) = try runHerald(["vapid-keys", "--out", directory], environment: [:])
        #expect(code == 0)
        let path = try #require(json["private_key_path"] as? String)
        let printed = try #require(json["application_server_key"] as? String)
        #expect(printed.count == 87)
        let pem = try String(contentsOfFile: path, encoding: .utf8)
        #expect(try VAPIDKey(pem: pem).applicationServerKey == printed)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o600)

        let (again, refusal) = try runHerald(["vapid-keys", "--out", directory], environment: [:])
        #expect(again == 2 && refusal["field"] as? String == "out")
        #expect(try String(contentsOfFile: path, encoding: .utf8) == pem, "the key is kept")
    }
}
