import Foundation
import HeraldHTTP2
import HeraldPushCore
import HeraldSimulatorSupport
import Logging
import NIOCore
import NIOHPACK
import NIOPosix
import Testing

/// The APNs and FCM HTTP/2 client against nghttpd, nghttp2's server (the reference HTTP/2
/// implementation, strict about HPACK table-size updates and flow control), over TLS.
@Suite struct NghttpdInteropTests {
    @Test("against nghttpd (stream limit 2, a 1,023-byte stream window, a 256-byte HPACK table): every upload echoed whole")
    func echoesThroughNghttpd() async throws {
        let nghttpd = "/usr/sbin/nghttpd"
        try #require(FileManager.default.isExecutableFile(atPath: nghttpd), "needs nghttpd: apt-get install nghttp2-server")
        let identity = try SimulatorTLSIdentity.generate()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-nghttpd-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyPath = directory.appendingPathComponent("key.pem").path
        let certPath = directory.appendingPathComponent("cert.pem").path
        try identity.leafKeyPEM.write(toFile: keyPath, atomically: true, encoding: .utf8)
        try identity.leafPEM.write(toFile: certPath, atomically: true, encoding: .utf8)

        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        // A free port: bound by the kernel's choice, then handed to nghttpd.
        let probe = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let port = probe.localAddress!.port!
        try await probe.close()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: nghttpd)
        server.arguments = [
            "--echo-upload", "-a", "127.0.0.1", "-m", "2", "-w", "10", "-c", "256", "-d", directory.path, "\(port)", keyPath, certPath,
        ]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        // SIGKILL: spawned from a pool thread, nghttpd inherits its blocked SIGTERM and would outlive the run.
        defer {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }

        let factory = try HTTP2ConnectionFactory(
            url: URL(string: "https://127.0.0.1:\(port)")!, trustRootsPEMFile: nil, trustRootsPEM: [identity.caPEM], connectTimeout: .seconds(5),
            pingInterval: .seconds(60), pingTimeout: .seconds(10))
        let pool = HTTP2ConnectionPool(factory: factory, group: group, size: 2, logger: Logger(label: "test"))
        // nghttpd listens within a moment of starting.
        var ready = false
        for _ in 0..<100 where !ready {
            let probe = try? await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port).get()
            if let probe { try await probe.close(); ready = true } else { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(ready)

        let token = "bearer " + String(repeating: "t", count: 180)
        let requests = (0..<30).map { index in
            var headers = HPACKHeaders()
            headers.add(name: "authorization", value: token)
            headers.add(name: "x-index", value: "\(index)")
            if index % 7 == 0 { headers.add(name: "x-pad", value: String(repeating: "p", count: 8_000), indexing: .nonIndexable) }
            let body = ByteBuffer(string: String(repeating: "\(index % 10)", count: 5_000 + index * 300))
            return HTTP2Request(path: "/echo", headers: headers, body: body)
        }
        let answers = pool.submit(requests, deadline: .now() + .seconds(20))
        for (request, answer) in zip(requests, answers) {
            let response = try await answer.get()
            #expect(response.status == 200)
            #expect(response.body == request.body)
        }
        await pool.shutdown()
        try await group.shutdownGracefully()
    }
}
