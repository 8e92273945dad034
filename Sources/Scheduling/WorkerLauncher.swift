import Foundation
import Synchronization

/// Starts worker processes, some of them ahead of need: while the supervisor is still planning,
/// each prestarted worker loads its ~120 libraries and libvips, so the first sources do not wait
/// for that (0.1-0.3 s of a run with both cores idle). Holds them until a slot takes one.
/// Prestarted workers are spawned on the launcher's own thread, which lives until `close()`: a
/// worker dies with the thread that started it (`PR_SET_PDEATHSIG`), and planning runs on a
/// database queue's pooled thread, which is no owner to tie a worker's life to.
package final class WorkerLauncher: Sendable {
    package let executable: String
    package let hello: WorkerHello
    package let quietStderr: Bool
    private let slots: Int

    private struct State {
        var wanted = 0
        var started = 0
        var waiting: [WorkerProcess] = []
        var closed = false
    }
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    package init(executable: String, hello: WorkerHello, quietStderr: Bool, slots: Int) {
        (self.executable, self.hello, self.quietStderr, self.slots) = (executable, hello, quietStderr, slots)
        let thread = Thread { [self] in spawnLoop() }
        thread.name = "runner.launcher"
        thread.start()
    }

    /// Makes sure `sources` workers (at most one per slot) are started or taken: called as planning
    /// finds work, so a job with nothing to do starts none and a small one only as many as it needs.
    package func prestart(forSources sources: Int) {
        let more = state.withLock { state in
            guard !state.closed, min(sources, slots) > state.wanted else { return false }
            state.wanted = min(sources, slots)
            return true
        }
        if more { wake.signal() }
    }

    /// A prestarted worker if one is waiting, else a new one.
    package func take() throws -> WorkerProcess { try state.withLock({ $0.waiting.popLast() }) ?? spawn() }

    /// Ends the workers no slot took (their end of input closes; each exits and is reaped), then the
    /// launcher's thread, once no worker it started is still running. Safe to call more than once.
    package func close() {
        let (unused, first) = state.withLock { (exchange(&$0.waiting, with: []), !exchange(&$0.closed, with: true)) }
        for worker in unused { worker.finish() }
        guard first else { return }
        wake.signal()
        stopped.wait()
    }

    private func spawnLoop() {
        defer { stopped.signal() }
        while true {
            wake.wait()
            while claimPrestart() {
                // A worker that cannot start here is left to the slot, which reports the error.
                guard let worker = try? spawn() else { break }
                let kept = state.withLock { state in
                    guard !state.closed else { return false }
                    state.waiting.append(worker)
                    return true
                }
                if !kept { worker.finish() }
            }
            if state.withLock({ $0.closed }) { return }
        }
    }

    /// Counts one more prestarted worker, if fewer than wanted have been started and not closed.
    private func claimPrestart() -> Bool {
        state.withLock { state in
            guard !state.closed, state.started < state.wanted else { return false }
            state.started += 1
            return true
        }
    }

    private func spawn() throws -> WorkerProcess {
        try WorkerProcess(executable: executable, hello: hello, quietStderr: quietStderr)
    }
}
