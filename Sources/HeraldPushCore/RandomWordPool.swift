#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Random words from the operating system's generator, drawn a buffer at a time. `getrandom`
/// costs a system call however few bytes it returns; 4 KiB serve 256 ids of 16 bytes. The
/// bytes are the kernel's own: nothing here stretches or reseeds them, and each is handed out
/// once.
final class RandomWordPool: Sendable {
    private struct Buffer {
        var words: [UInt64]
        var next: Int
    }

    private let buffer: Mutex<Buffer>

    /// A pool that draws `words` 64-bit words at a time (at least two).
    init(words: Int = 512) {
        precondition(words >= 2, "a draw serves at least one pair")
        buffer = Mutex(Buffer(words: [UInt64](repeating: 0, count: words), next: words))
    }

    /// Two words no other call has had.
    func next() -> (UInt64, UInt64) {
        buffer.withLock { buffer in
            if buffer.next + 2 > buffer.words.count {
                Self.fill(&buffer.words)
                buffer.next = 0
            }
            defer { buffer.next += 2 }
            return (buffer.words[buffer.next], buffer.words[buffer.next + 1])
        }
    }

    private static func fill(_ words: inout [UInt64]) {
        #if canImport(Glibc)
        // glibc's arc4random_buf loops over getrandom until the buffer is full and aborts if
        // the kernel cannot give randomness, so a short read never leaves zeros behind.
        words.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
        #else
        var generator = SystemRandomNumberGenerator()
        for i in words.indices { words[i] = generator.next() }
        #endif
    }
}
