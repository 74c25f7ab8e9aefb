import Foundation
import HeraldPushCore
import HeraldWebPush
import HeraldWebPushCore
import Testing

@Suite("Web Push endpoints and the addresses Herald sends to (SSRF)")
struct WebPushEndpointTests {
    @Test("endpoints: https, a host, no user info or fragment, at most 1,000 bytes", arguments: [
        ("https://fcm.googleapis.com/fcm/send/abc:APA91b", nil),
        ("https://updates.push.services.mozilla.com/wpush/v2/gAAAA", nil),
        ("https://[2001:4860::1]:8443/push", nil),
        ("http://push.example.net/x", WebPushEndpointError.scheme),
        ("ftp://push.example.net/x", .scheme),
        ("https://user:pw@push.example.net/x", .notURL),
        ("https://push.example.net/x#frag", .notURL),
        ("https:///nohost", .notURL),
        ("not a url", .notURL),
        ("", .length),
        ("https://push.example.net/" + String(repeating: "a", count: 1_000), .length),
    ] as [(String, WebPushEndpointError?)])
    func endpoints(text: String, error: WebPushEndpointError?) {
        if let error {
            #expect(throws: error) { try WebPushEndpoint(text) }
        } else {
            #expect((try? WebPushEndpoint(text)) != nil)
        }
    }

    @Test("public or not", arguments: [
        ("142.250.74.78", true), ("2a00:1450:4001:82b::200a", true), ("8.8.8.8", true), ("100.63.255.255", true), ("172.32.0.1", true),
        ("127.0.0.1", false), ("10.1.2.3", false), ("172.16.0.1", false), ("172.31.255.255", false), ("192.168.1.1", false),
        ("169.254.169.254", false), ("100.64.0.1", false), ("0.0.0.0", false), ("224.0.0.1", false), ("255.255.255.255", false),
        ("198.18.0.1", false), ("::1", false), ("::", false), ("fe80::1", false), ("fd00::1", false), ("ff02::1", false),
        ("::ffff:127.0.0.1", false), ("::ffff:8.8.8.8", true), ("64:ff9b::a9fe:a9fe", false), ("2001:db8::1", false),
        // Other ways to write an inside IPv4 address in IPv6.
        ("::127.0.0.1", false), ("::8.8.8.8", false), ("::ffff:0:127.0.0.1", false), ("::ffff:0:8.8.8.8", false),
        ("64:ff9b:1::a9fe:a9fe", false), ("2002:a9fe:a9fe::1", false), ("2002:7f00:1::1", false), ("2002:808:808::1", true),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", false),
        // Documentation, benchmarking, SRv6 and the 6to4 relay: special-purpose, no push service there.
        ("3fff::1", false), ("3fff:fff::1", false), ("2001:2::1", false), ("2001:1ff::1", false), ("5f00::1", false),
        ("192.88.99.1", false), ("192.88.98.1", true), ("3ffe::1", true), ("2001:200::1", true), ("2001:4860:4860::8888", true),
    ])
    func classification(address: String, isPublic: Bool) throws {
        let bytes = try #require(IPAddressLiteral.bytes(address))
        #expect(WebPushAddressPolicy.isPublic(bytes) == isPublic)
    }

    @Test("a host resolving to one inside address is refused, unless the operator allows the host")
    func policy() throws {
        let endpoint = try WebPushEndpoint("https://push.example.net/x")
        let inside = try #require(IPAddressLiteral.bytes("10.0.0.5"))
        let outside = try #require(IPAddressLiteral.bytes("142.250.74.78"))
        #expect(throws: WebPushEndpointError.internalAddress("10.0.0.5")) {
            try WebPushAddressPolicy().check(endpoint, resolvedTo: [outside, inside])
        }
        #expect(throws: WebPushEndpointError.internalAddress("no address")) { try WebPushAddressPolicy().check(endpoint, resolvedTo: []) }
        try WebPushAddressPolicy().check(endpoint, resolvedTo: [outside])
        try WebPushAddressPolicy(allowedHosts: ["PUSH.example.net"]).check(endpoint, resolvedTo: [inside])
        #expect(IPAddressLiteral.bytes("push.example.net") == nil)
        // Push services answer on 443: another port on a public host is refused, unless allowed as host:port.
        let smtp = try WebPushEndpoint("https://push.example.net:25/x")
        #expect(throws: WebPushEndpointError.port(25)) { try WebPushAddressPolicy().check(smtp, resolvedTo: [outside]) }
        try WebPushAddressPolicy(allowedHosts: ["push.example.net:25"]).check(smtp, resolvedTo: [outside])
    }

    @Test("DNS lookups run on threads of their own, at most 32 at once, those past their deadline included: the next fails for now at once")
    func boundedLookups() async throws {
        let release = DispatchSemaphore(value: 0)
        // A DNS server that never answers, until the test lets it.
        let resolver = SystemHostResolver(lookup: { _ in
            release.wait()
            return [[93, 184, 215, 14]]
        })
        let hanging = (0..<SystemHostResolver.maximumOutstanding).map { i in Task { try await resolver.addresses(of: "slow\(i).example") } }
        for _ in 0..<200 where resolver.running < SystemHostResolver.maximumOutstanding { try await Task.sleep(for: .milliseconds(10)) }
        #expect(resolver.running == SystemHostResolver.maximumOutstanding)
        await #expect(throws: WebPushLookupFailure.self) { try await resolver.addresses(of: "one-more.example") }
        // A literal address needs no lookup and is never refused.
        #expect(try await resolver.addresses(of: "93.184.215.14") == [[93, 184, 215, 14]])
        for _ in hanging { release.signal() }
        for task in hanging { #expect(try await task.value == [[93, 184, 215, 14]]) }
        #expect(resolver.running == 0)
    }

    @Test("a DNS server that never answers holds a send for the guard's deadline only: the endpoint is unavailable for now")
    func resolveDeadline() async throws {
        let never = DispatchSemaphore(value: 0)
        defer { never.signal() }
        let guardian = {
            var made = WebPushEndpointGuard(resolver: SystemHostResolver(lookup: { _ in never.wait(); return [] }))
            made.resolveTimeout = .milliseconds(200)
            return made
        }()
        let endpoint = try WebPushEndpoint("https://push.example.net/x")
        // Without the deadline this would wait for ever; the outer bound turns that into a failure.
        let outcome = await withTaskGroup(of: String?.self) { group in
            group.addTask {
                do { _ = try await guardian.addresses(for: endpoint); return "resolved" } catch { return "\(error)" }
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(60))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        #expect(outcome == "\(WebPushEndpointError.unavailable("push.example.net"))", "\(String(describing: outcome))")
    }
}
