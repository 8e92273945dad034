import Synchronization
import Support

/// Starts worker processes, some of them ahead of need: while the supervisor is still planning,
/// each prestarted worker loads its ~120 libraries and libvips, so the first sources do not wait
/// for that (0.1-0.3 s of a run with both cores idle). Holds them until a slot takes one.
package final class WorkerLauncher: Sendable {
    package let executable: String
    package let hello: WorkerHello
    package let quietStderr: Bool
    private let slots: Int
    private let waiting = Mutex<[WorkerProcess]>([])
    private let prestarted = Mutex(0)

    package init(executable: String, hello: WorkerHello, quietStderr: Bool, slots: Int) {
        (self.executable, self.hello, self.quietStderr, self.slots) = (executable, hello, quietStderr, slots)
    }

    /// Makes sure `sources` workers (at most one per slot) are started or taken: called as planning
    /// finds work, so a job with nothing to do starts none and a small one only as many as it needs.
    /// A worker that cannot start here is left to the slot, which reports the error.
    package func prestart(forSources sources: Int) {
        let wanted = min(sources, slots)
        while prestarted.withLock({ $0 < wanted }) {
            prestarted.withLock { $0 += 1 }
            guard let worker = try? spawn() else { return }
            waiting.withLock { $0.append(worker) }
        }
    }

    /// A prestarted worker if one is waiting, else a new one.
    package func take() throws -> WorkerProcess {
        if let ready = waiting.withLock({ $0.popLast() }) { return ready }
        return try spawn()
    }

    /// Ends the workers no slot took (their end of input closes; each exits and is reaped).
    package func finishUnused() {
        for worker in waiting.withLock({ queue in defer { queue = [] }; return queue }) { worker.finish() }
    }

    private func spawn() throws -> WorkerProcess {
        try WorkerProcess(executable: executable, hello: hello, quietStderr: quietStderr)
    }
}
