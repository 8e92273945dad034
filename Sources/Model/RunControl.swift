import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Shared stop state of a run. The first SIGINT/SIGTERM, or the end of the time budget, drains
/// (no new items; in-flight ones finish and are recorded); a second signal abandons (workers are
/// killed; their items stay `running` in the database and run again next time).
package final class RunControl: Sendable {
    package init() {}

    package enum Phase: Sendable { case running, draining, abandoning }

    private struct State {
        var phase = Phase.running
        var signal: Int32?
        var budgetReached = false
        var workers: Set<pid_t> = []
    }

    private let state = Mutex(State())

    package var phase: Phase { state.withLock { $0.phase } }
    package var stopSignal: Int32? { state.withLock { $0.signal } }
    package var budgetReached: Bool { state.withLock { $0.budgetReached } }

    /// The time budget (`--deadline`, `--max-duration`) ran out: drain, as the first signal does.
    /// Returns false when the run was already stopping.
    package func stopForBudget() -> Bool {
        state.withLock { state in
            guard state.phase == .running else { return false }
            state.phase = .draining
            state.budgetReached = true
            return true
        }
    }

    /// The run cannot go on (its state database cannot be written): drain, as the first signal does.
    package func stopForFailure() {
        state.withLock { state in
            if state.phase == .running { state.phase = .draining }
        }
    }

    package func requestStop(signal: Int32) {
        let victims: Set<pid_t> = state.withLock { state in
            state.signal = state.signal ?? signal
            switch state.phase {
            case .running:
                state.phase = .draining
                return []
            case .draining, .abandoning:
                state.phase = .abandoning
                return state.workers
            }
        }
        for pid in victims { kill(pid, SIGKILL) }
    }

    package func register(worker pid: pid_t) {
        let abandoned = state.withLock { state in
            state.workers.insert(pid)
            return state.phase == .abandoning
        }
        if abandoned { kill(pid, SIGKILL) }
    }

    package func unregister(worker pid: pid_t) { _ = state.withLock { $0.workers.remove(pid) } }
}

/// Routes SIGINT and SIGTERM to a `RunControl` for the duration of a run.
package final class SignalTrap {
    private var sources: [any DispatchSourceSignal] = []

    package init(_ control: RunControl, onSignal: @escaping @Sendable (Int32, RunControl.Phase) -> Void) {
        for signalNumber in [SIGINT, SIGTERM] {
            // Ignored at the process level so only the dispatch source sees it; workers inherit
            // the ignore, which is what they need: the supervisor decides when they stop.
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                control.requestStop(signal: signalNumber)
                onSignal(signalNumber, control.phase)
            }
            source.resume()
            sources.append(source)
        }
    }

    deinit { sources.forEach { $0.cancel() } }
}
