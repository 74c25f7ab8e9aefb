@testable import HeraldHTTP2
import NIOCore
import NIOHPACK
import NIOHTTP2
import Testing

/// The request header encoder, read back by NIOHPACK's decoder (an HPACK implementation nobody
/// here wrote), block after block, so the two dynamic tables must stay in step.
@Suite struct HeaderBlockEncoderTests {
    static func push(_ id: Int, token: String) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":path", value: "/3/device/\(String(repeating: "ab", count: 32))", indexing: .nonIndexable)
        headers.add(name: ":authority", value: "api.push.apple.com")
        headers.add(name: "authorization", value: token)
        headers.add(name: "apns-topic", value: "com.example.app")
        headers.add(name: "apns-id", value: "0f4c2d9e-0000-4000-8000-\(String(repeating: "0", count: 11))\(id % 10)", indexing: .nonIndexable)
        headers.add(name: "x-secret", value: "never \(id)", indexing: .neverIndexed)
        return headers
    }

    static func roundTrip(_ encoder: inout HeaderBlockEncoder, _ decoder: inout HPACKDecoder, _ headers: HPACKHeaders) throws -> (HPACKHeaders, Int) {
        var block = ByteBuffer()
        encoder.encode(headers, into: &block)
        let size = block.readableBytes
        let decoded = try decoder.decodeHeaders(from: &block)
        #expect(block.readableBytes == 0)
        return (decoded, size)
    }

    @Test("headers read back as sent, indexing marks included; repeated ones go as table indexes after the first block")
    func repeatedHeadersAreIndexed() throws {
        var encoder = HeaderBlockEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        let token = "bearer " + String(repeating: "j", count: 300)
        var sizes: [Int] = []
        for id in 0..<5 {
            let headers = Self.push(id, token: token)
            let (decoded, size) = try Self.roundTrip(&encoder, &decoder, headers)
            #expect(decoded == headers)
            #expect(decoded.map(\.indexable) == headers.map(\.indexable))
            sizes.append(size)
        }
        // The token, topic and authority went once; after, a byte each.
        #expect(sizes[0] > 300 + 100 && sizes[1...].allSatisfy { $0 < 150 })
    }

    @Test("a smaller table from the server's SETTINGS is signalled at the next block, evicting as the decoder does")
    func tableSizeUpdate() throws {
        var encoder = HeaderBlockEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        let token = "bearer " + String(repeating: "t", count: 200)
        _ = try Self.roundTrip(&encoder, &decoder, Self.push(0, token: token))
        // The server lowers its table to 256 bytes (then briefly 64): the token no longer fits beside the rest.
        decoder.maxDynamicTableLength = 256
        encoder.setMaximumTableSize(64)
        encoder.setMaximumTableSize(256)
        // The block opens with both updates, the smallest first (nghttp2 refuses a block without them).
        var block = ByteBuffer()
        encoder.encode(Self.push(1, token: token), into: &block)
        #expect(Array(block.readableBytesView.prefix(5)) == [0x3f, 0x21, 0x3f, 0xe1, 0x01])
        #expect(try decoder.decodeHeaders(from: &block) == Self.push(1, token: token))
        for id in 2..<6 {
            let headers = Self.push(id, token: id % 2 == 0 ? token : "bearer short-\(id)")
            #expect(try Self.roundTrip(&encoder, &decoder, headers).0 == headers)
        }
        // A header larger than the whole table goes as a literal and leaves the table alone.
        var huge = Self.push(7, token: token)
        huge.add(name: "x-large", value: String(repeating: "l", count: 1_000))
        #expect(try Self.roundTrip(&encoder, &decoder, huge).0 == huge)
        #expect(try Self.roundTrip(&encoder, &decoder, Self.push(8, token: "bearer short-1")).0 == Self.push(8, token: "bearer short-1"))
    }

    @Test("integers past their prefix (long values, deep indexes) read back whole", arguments: [0, 1, 126, 127, 128, 255, 16_384, 70_000])
    func longIntegers(_ length: Int) throws {
        var encoder = HeaderBlockEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator(), maxDynamicTableSize: 4_096, maxHeaderListSize: 1 << 20)
        var headers = HPACKHeaders()
        // Enough small indexed entries that the last sits past index 127.
        for index in 0..<70 { headers.add(name: "x-\(index)", value: "v") }
        headers.add(name: "x-long", value: String(repeating: "a", count: length), indexing: .nonIndexable)
        #expect(try Self.roundTrip(&encoder, &decoder, headers).0 == headers)
        #expect(try Self.roundTrip(&encoder, &decoder, headers).0 == headers)
    }

    @Test("blocks whose headers change, move and come and go read back as sent, so a header found where it was last time or searched for names the decoder's entry")
    func changingBlocks() throws {
        var encoder = HeaderBlockEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        // A fixed seed: the same 400 blocks every run.
        var random = HTTP2ClientFramerFuzzTests.SeededGenerator(state: 0x4845_5241_4c44)
        let tokens = (0..<3).map { "bearer " + String(repeating: Character(String($0)), count: 100 + 40 * $0) }
        for block in 0..<400 {
            var pool: [(String, String, HPACKIndexing)] = [
                ("authorization", tokens[Int(random.next() % 3)], .indexable),
                ("apns-topic", "com.example.app\(random.next() % 2)", .indexable),
                ("apns-push-type", ["alert", "background", "voip"][Int(random.next() % 3)], .indexable),
                ("apns-priority", "\(5 + 5 * (random.next() % 2))", .indexable),
                ("apns-id", "id-\(block)", .nonIndexable),
                ("apns-collapse-id", "c\(random.next() % 4)", .indexable),
            ]
            // Some headers left out, the rest in a shuffled order, after the pseudo-headers.
            pool = pool.filter { _ in random.next() % 4 != 0 }
            for i in pool.indices.reversed() { pool.swapAt(i, Int(random.next() % UInt64(i + 1))) }
            var headers = HPACKHeaders()
            headers.add(name: ":method", value: random.next() % 2 == 0 ? "POST" : "GET")
            headers.add(name: ":scheme", value: random.next() % 2 == 0 ? "https" : "http")
            headers.add(name: ":path", value: "/3/device/\(block)", indexing: .nonIndexable)
            for (name, value, indexing) in pool { headers.add(name: name, value: value, indexing: indexing) }
            if block == 200 { encoder.setMaximumTableSize(300); decoder.maxDynamicTableLength = 300 }
            let decoded = try Self.roundTrip(&encoder, &decoder, headers).0
            #expect(decoded == headers)
            #expect(decoded.map(\.indexable) == headers.map(\.indexable))
        }
    }

    @Test("a request's pseudo-headers encoded beside its own headers give the very bytes of the merged list, block after block")
    func requestHeadsAsMergedLists() throws {
        var direct = HeaderBlockEncoder()
        var merged = HeaderBlockEncoder()
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var random = HTTP2ClientFramerFuzzTests.SeededGenerator(state: 0x6865_6164)
        for block in 0..<300 {
            var headers = HPACKHeaders()
            if random.next() % 4 != 0 { headers.add(name: "authorization", value: "bearer \(random.next() % 3)") }
            headers.add(name: "apns-topic", value: "com.example.app\(random.next() % 2)")
            headers.add(name: "apns-id", value: "id-\(block)", indexing: .nonIndexable)
            if random.next() % 3 == 0 { headers.add(name: "x-secret", value: "s\(block)", indexing: .neverIndexed) }
            let head = HTTP2OutgoingRequest(
                streamID: HTTP2StreamID(2 * block + 1), method: random.next() % 3 == 0 ? "GET" : "POST", path: "/3/device/\(random.next() % 5)",
                authority: random.next() % 5 == 0 ? "api.sandbox.push.apple.com" : "api.push.apple.com", headers: headers, body: nil)
            if block == 150 {
                direct.setMaximumTableSize(200)
                merged.setMaximumTableSize(200)
                decoder.maxDynamicTableLength = 200
            }
            var bytes = ByteBuffer()
            direct.encode(head.headers, request: head, into: &bytes)
            var expected = ByteBuffer()
            merged.encode(head.allHeaders, into: &expected)
            #expect(bytes == expected, "block \(block)")
            let decoded = try decoder.decodeHeaders(from: &bytes)
            #expect(decoded == head.allHeaders)
            #expect(decoded.map(\.indexable) == head.allHeaders.map(\.indexable))
        }
    }
}
