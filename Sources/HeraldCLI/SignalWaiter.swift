import Dispatch
import Foundation

/// Waits for SIGINT or SIGTERM, for long-running commands that must exit 0 on either.
enum SignalWaiter {
    static func waitForTermination() async -> Int32 {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            let queue = DispatchQueue(label: "herald.signals")
            let once = Once(continuation)
            let sources = [SIGINT, SIGTERM].map { sig -> DispatchSourceSignal in
                signal(sig, SIG_IGN)
                return DispatchSource.makeSignalSource(signal: sig, queue: queue)
            }
            for (source, sig) in zip(sources, [SIGINT, SIGTERM]) {
                // The handler holds the sources, keeping them alive until a signal comes.
                source.setEventHandler {
                    once.resume(sig)
                    sources.forEach { $0.cancel() }
                }
                source.resume()
            }
        }
    }

    private final class Once: @unchecked Sendable {
        private var continuation: CheckedContinuation<Int32, Never>?
        private let lock = NSLock()
        init(_ continuation: CheckedContinuation<Int32, Never>) { self.continuation = continuation }
        func resume(_ value: Int32) {
            lock.lock()
            let c = continuation
            continuation = nil
            lock.unlock()
            c?.resume(returning: value)
        }
    }
}
