package import NIOCore

/// Runs the jobs of tasks that prefer it on one NIO event loop.
///
/// A task that mostly waits for HTTP/2 answers resumes on the loop that completed them, and
/// the pool gives it a connection on that loop: its push then goes out and comes back without a
/// hand-over between threads. Its jobs must not block, as nothing on an event loop may.
package final class EventLoopTaskExecutor: TaskExecutor {
    package let eventLoop: any EventLoop

    package init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
