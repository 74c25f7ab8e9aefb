import Foundation
import HeraldTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Slow clients, as an attacker runs them: each sends a request head announcing a 64 KiB body,
/// then a byte now and then. They must not take the process's descriptors or keep a fresh
/// client out.
@Suite("Slow clients against herald serve")
struct SlowClientTests {
    static let attackers = 2_000
    static let rounds = 5

    @Test("2,000 slow clients under an open-file limit of 1,024: /healthz answers on a fresh connection throughout, and the process lives")
    func slowClients() async throws {
        // The attackers' own descriptors: this process needs more than 1,024 of them.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        try #require(limit.rlim_max >= 4_096, "the test needs an open-file hard limit of 4,096 (it is \(limit.rlim_max))")
        if limit.rlim_cur < 4_096 {
            limit.rlim_cur = 4_096
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-slow-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let serve = try ServeProcess(environment: [
            "HERALD_DATABASE_URL": "sqlite:" + directory.appendingPathComponent("herald.sqlite").path, "HERALD_HTTP_PORT": "0",
            // No rate limit: every slow request reaches its route and waits for its body there.
            "HERALD_REGISTRATION_RATE": "0",
        ], openFileLimit: 1_024)
        defer { if serve.process.process.isRunning { serve.process.kill(SIGKILL) } }
        let port = try #require(Int(serve.api.split(separator: ":").last ?? ""))
        let pid = serve.process.process.processIdentifier

        let report = try await offPool { () -> (answers: [String], maximumDescriptors: Int) in
            var answers: [String] = []
            var maximumDescriptors = 0
            func check() {
                answers.append(Self.healthz(port: port))
                maximumDescriptors = max(maximumDescriptors, Self.descriptors(of: pid))
            }
            var open: [Int32] = []
            for i in 0..<Self.attackers {
                if let fd = Self.slowRequest(port: port) { open.append(fd) }
                if i % 250 == 249 { check() }
            }
            // A byte each, now and then; a client whose connection was closed comes back.
            for _ in 0..<Self.rounds {
                for (i, fd) in open.enumerated() {
                    var byte: UInt8 = 0x20
                    if send(fd, &byte, 1, Int32(MSG_NOSIGNAL)) != 1 {
                        close(fd)
                        open[i] = Self.slowRequest(port: port) ?? -1
                    }
                }
                open.removeAll { $0 < 0 }
                check()
                usleep(500_000)
            }
            for fd in open { close(fd) }
            return (answers, maximumDescriptors)
        }
        #expect(report.answers.allSatisfy { $0 == "200" }, "\(report.answers)")
        #expect(report.answers.count == Self.attackers / 250 + Self.rounds)
        #expect(report.maximumDescriptors > 0 && report.maximumDescriptors <= 1_024, "\(report.maximumDescriptors)")
        #expect(serve.process.process.isRunning)
        // Still serving after the attack, and it stops cleanly.
        #expect(Self.healthz(port: port) == "200")
        serve.process.kill(SIGTERM)
        #expect(serve.process.process.terminationStatus == 0, "\(serve.process.fullLog().suffix(2_000))")
    }

    /// A connection to the API on loopback, with 10-second send and receive timeouts; nil if it fails.
    static func connection(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// A registration whose head promises 65,536 bytes of body, and its first byte.
    static func slowRequest(port: Int) -> Int32? {
        guard let fd = connection(port: port) else { return nil }
        let head = "POST /v1/push/register HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n{"
        let sent = head.utf8CString.withUnsafeBufferPointer { send(fd, $0.baseAddress, head.utf8.count, Int32(MSG_NOSIGNAL)) }
        guard sent == head.utf8.count else {
            close(fd)
            return nil
        }
        return fd
    }

    /// `GET /healthz` on a fresh connection: the status code, or what went wrong.
    static func healthz(port: Int) -> String {
        guard let fd = connection(port: port) else { return "no connection" }
        defer { close(fd) }
        let request = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        guard request.utf8CString.withUnsafeBufferPointer({ send(fd, $0.baseAddress, request.utf8.count, Int32(MSG_NOSIGNAL)) }) == request.utf8.count else {
            return "not sent"
        }
        var buffer = [UInt8](repeating: 0, count: 512)
        let read = recv(fd, &buffer, buffer.count, 0)
        guard read > 12 else { return "no answer (\(read), errno \(errno))" }
        let line = String(decoding: buffer[0..<read], as: UTF8.self)
        return String(line.dropFirst("HTTP/1.1 ".count).prefix(3))
    }

    /// How many descriptors the process has open.
    static func descriptors(of pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
    }
}
