import Dispatch
import Foundation

/// SIGINT and SIGTERM for long-running commands that must exit 0 on either. It listens from the
/// moment it is made: make it before the command announces that it is ready, so a signal sent
/// once it is ready is never lost (one that came between ignoring the signal and arming its
/// source was dropped, and the command never exited).
final class SignalWaiter: @unchecked Sendable {
    private let signals: AsyncStream<Int32>
    /// Kept alive while the command runs; they only yield into `signals`.
    private let sources: [any DispatchSourceSignal]

    init() {
        let (signals, continuation) = AsyncStream.makeStream(of: Int32.self, bufferingPolicy: .bufferingNewest(1))
        let queue = DispatchQueue(label: "herald.signals")
        sources = [SIGINT, SIGTERM].map { sig in
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { continuation.yield(sig) }
            source.resume()
            return source
        }
        self.signals = signals
    }

    /// The first signal, once it comes (at once when it already came).
    func termination() async -> Int32 {
        for await sig in signals { return sig }
        return SIGTERM
    }
}
