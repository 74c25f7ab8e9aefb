import Foundation
import HeraldDelivery
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Testing

@testable import HeraldServer

@Suite("The client behind a request", .serialized)
struct ClientAddressTests {
    static let proxies = [IPNetwork("127.0.0.0/8")!, IPNetwork("10.0.0.0/8")!, IPNetwork("::1/128")!]

    @Test("CIDRs parse, IPv4 and IPv6, and refuse what is not one", arguments: [
        ("10.0.0.0/8", true), ("192.168.1.7", true), ("::1/128", true), ("2001:db8::/32", true),
        ("10.0.0.0/33", false), ("10.0.0/8", false), ("example.com", false), ("::1/129", false), ("", false),
    ])
    func parsing(text: String, valid: Bool) {
        #expect((IPNetwork(text) != nil) == valid)
    }

    @Test("an IPv4 block holds its addresses IPv4-mapped too (a listener on ::); an IPv6 block does not hold IPv4")
    func mapped() {
        #expect(IPNetwork("10.0.0.0/8")!.contains("::ffff:10.9.8.7"))
        #expect(!IPNetwork("10.0.0.0/8")!.contains("::ffff:11.0.0.1"))
        #expect(!IPNetwork("::1/128")!.contains("127.0.0.1"))
        #expect(!IPNetwork("10.0.0.0/8")!.contains("::10.9.8.7"))
    }

    @Test("a header counts only from a trusted proxy; the nearest untrusted hop is the client", arguments: [
        ("127.0.0.1", nil, "203.0.113.5", "203.0.113.5"),
        ("127.0.0.1", nil, "198.51.100.9, 10.0.0.2", "198.51.100.9"),
        ("127.0.0.1", nil, "198.51.100.9, 203.0.113.7", "203.0.113.7"),  // the nearest untrusted hop, not a forged leftmost one
        ("127.0.0.1", #"for="[2001:db8::1]:4711", for=10.0.0.3"#, nil, "2001:db8::1"),
        ("127.0.0.1", "for=192.0.2.60;proto=https", nil, "192.0.2.60"),
        ("192.0.2.44", nil, "203.0.113.5", "192.0.2.44"),                 // an untrusted peer's header is ignored
        ("127.0.0.1", nil, "not-an-address", "127.0.0.1"),
        // A listener on `::` sees an IPv4 proxy as IPv4-mapped: it is still that trusted proxy.
        ("::ffff:127.0.0.1", nil, "203.0.113.5", "203.0.113.5"),
        ("::ffff:10.1.2.3", nil, "198.51.100.9", "198.51.100.9"),
        ("::ffff:192.0.2.44", nil, "203.0.113.5", "::ffff:192.0.2.44"),
    ] as [(String, String?, String?, String)])
    func client(peer: String, forwarded: String?, forwardedFor: String?, expected: String) {
        let header: ProxyHeader = forwarded == nil ? .xForwardedFor : .forwarded
        #expect(ClientAddress.of(peer: peer, forwarded: forwarded, forwardedFor: forwardedFor, trusted: Self.proxies, header: header) == expected)
        // Trusting nobody, the peer is the client whatever it says.
        #expect(ClientAddress.of(peer: peer, forwarded: forwarded, forwardedFor: forwardedFor, trusted: []) == peer)
    }

    @Test("only the header the proxy writes counts; ports and brackets are read; an unknown hop is answered for by the proxy that wrote it", arguments: [
        // The client's own Forwarded header beside the proxy's X-Forwarded-For: ignored.
        (#"for=198.51.100.77"#, "203.0.113.5", ProxyHeader.xForwardedFor, "203.0.113.5"),
        (#"for=198.51.100.77"#, "203.0.113.5", ProxyHeader.forwarded, "198.51.100.77"),
        // A port or brackets on the nearest hop do not let the walk skip to a forged entry.
        (nil, "198.51.100.77, 203.0.113.5:4711", ProxyHeader.xForwardedFor, "203.0.113.5"),
        (nil, "198.51.100.77, [2001:db8::9]:443", ProxyHeader.xForwardedFor, "2001:db8::9"),
        // `unknown` ends the walk: the hop that wrote it is the client's bucket.
        (nil, "198.51.100.77, unknown, 10.0.0.2", ProxyHeader.xForwardedFor, "10.0.0.2"),
        (nil, "198.51.100.77, unknown", ProxyHeader.xForwardedFor, "127.0.0.1"),
    ] as [(String?, String?, ProxyHeader, String)])
    func spoofing(forwarded: String?, forwardedFor: String?, header: ProxyHeader, expected: String) {
        #expect(ClientAddress.of(peer: "127.0.0.1", forwarded: forwarded, forwardedFor: forwardedFor, trusted: Self.proxies, header: header) == expected)
    }

    @Test("buckets: IPv4 as it is, IPv6 by its /64, IPv4-mapped IPv6 as IPv4")
    func bucketKeys() {
        #expect(ClientAddress.bucket("203.0.113.5") == "203.0.113.5")
        #expect(ClientAddress.bucket("2001:db8:1:2:aaaa::1") == ClientAddress.bucket("2001:db8:1:2:ffff:1:2:3"))
        #expect(ClientAddress.bucket("2001:db8:1:2::1") == "2001:db8:1:2::/64")
        #expect(ClientAddress.bucket("2001:db8:1:3::1") != ClientAddress.bucket("2001:db8:1:2::1"))
        #expect(ClientAddress.bucket("::ffff:203.0.113.5") == "203.0.113.5")
    }

    static func register(_ i: Int) -> String {
        #"{"device_token":"\#(String(repeating: String(format: "%02x", i), count: 32))","platform":"ios","watched_addresses":["session:s"]}"#
    }

    static func headers(forwardedFor: String) -> HTTPFields {
        [.contentType: "application/json", HTTPField.Name("X-Forwarded-For")!: forwardedFor]
    }

    @Test("behind a trusted proxy each client has its own registration bucket; without one, a header buys nothing")
    func buckets() async throws {
        @Sendable func register(_ client: any TestClientProtocol, _ i: Int, from address: String) async throws -> HTTPResponse.Status {
            try await send(client, .post, "/v1/push/register", Self.register(i), headers: Self.headers(forwardedFor: address)).status
        }
        try await withRegistrationServer(configure: {
            $0.rateLimits.registration = .init(rate: 0.01, burst: 2)
            $0.rateLimits.trustedProxies = Self.proxies
        }) { client, _ in
            let first = try await register(client, 1, from: "203.0.113.5")
            let second = try await register(client, 2, from: "203.0.113.5")
            let third = try await register(client, 3, from: "203.0.113.5")
            let other = try await register(client, 4, from: "203.0.113.6")
            #expect(first == .ok && second == .ok)
            #expect(third == .tooManyRequests)
            #expect(other == .ok)
        }
        try await withRegistrationServer(configure: { $0.rateLimits.registration = .init(rate: 0.01, burst: 2) }) { client, _ in
            let first = try await register(client, 1, from: "203.0.113.1")
            let second = try await register(client, 2, from: "203.0.113.2")
            let third = try await register(client, 3, from: "203.0.113.3")
            #expect(first == .ok && second == .ok)
            #expect(third == .tooManyRequests)
        }
    }
}

@Suite("Publishing buckets")
struct PublishingBucketTests {
    @Test("made-up bearer strings get no bucket; a real key gets one")
    func onlyRealKeys() throws {
        var limits = RateLimits()
        limits.publishing = .init(rate: 1, burst: 1)
        let middleware = RateLimitMiddleware<HeraldRequestContext>(limits, apps: .single(AppSettings(id: "default", publishKeys: ["publisher-key-00001"])))
        for i in 0..<1_000 { try middleware.limitPublishing(bearer: "guess-\(i)") }
        try middleware.limitPublishing(bearer: nil)
        #expect(middleware.publishing.bucketCount == 0)
        try middleware.limitPublishing(bearer: "publisher-key-00001")
        #expect(middleware.publishing.bucketCount == 1)
        #expect(throws: APIError.self) { try middleware.limitPublishing(bearer: "publisher-key-00001") }
    }
}
