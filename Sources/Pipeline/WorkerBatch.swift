import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Support
import Model
import Scheduling

/// Tasks rendered by a few worker processes outside a run (`runner preview`, a report's previews),
/// with a run's isolation: a worker that dies or stops answering for `timeout` seconds fails its
/// own task (`crashed`) and the next task gets a fresh worker.
package enum WorkerBatch {
    /// One list of outcomes per task, in order.
    package static func render(_ tasks: [WorkerTask], hello: WorkerHello, workers: Int, timeout: Double,
                               verbose: Bool) -> [[ItemOutcome]] {
        // A worker that dies with a task queued must fail the write (EPIPE), not kill this process.
        signal(SIGPIPE, SIG_IGN)
        let results = Mutex([[ItemOutcome]](repeating: [], count: tasks.count))
        let next = Atomic(0)
        DispatchQueue.concurrentPerform(iterations: max(1, min(workers, tasks.count))) { _ in
            var worker: WorkerProcess?
            while case let index = next.add(1, ordering: .relaxed).oldValue, index < tasks.count {
                let outcomes = render(tasks[index], on: &worker, hello: hello, timeout: timeout, verbose: verbose)
                results.withLock { $0[index] = outcomes }
            }
            worker?.finish()
        }
        return results.withLock { $0 }
    }

    private static func render(_ task: WorkerTask, on worker: inout WorkerProcess?, hello: WorkerHello, timeout: Double,
                               verbose: Bool) -> [ItemOutcome] {
        func failed(_ message: String) -> [ItemOutcome] {
            task.requests.map { _ in .failed(ItemFailure(.crashed, message), seconds: 0) }
        }
        let current: WorkerProcess
        do {
            current = try worker ?? WorkerProcess(executable: JobRunner.currentExecutable(), hello: hello, quietStderr: !verbose)
        } catch {
            return failed("\(error)")
        }
        worker = current
        do throws(ChannelError) {
            guard current.send(task) else { throw .closed }
            return try current.receiveReply(within: timeout).outcomes
        } catch {
            worker = nil
            current.kill()
            let how = error == .timedOut ? "stopped answering and was killed after \(Int(timeout)) s" : current.waitStatus()
            // It may have staged some of the task's outputs; nothing will publish them.
            for request in task.requests { unlink(AtomicFile.temporaryPath(for: request.path, owner: getpid())) }
            return failed("worker process \(how) while processing \(task.source)")
        }
    }
}
