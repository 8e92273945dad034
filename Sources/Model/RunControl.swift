import Foundation
import Synchronization

/// Shared stop state of a run. The first SIGINT/SIGTERM, or the end of the time budget, drains
/// (no new items; in-flight ones finish and are recorded); a second signal abandons (workers are
/// killed; their items stay `running` in the database and run again next time).
package final class RunControl: Sendable {
    package init() {}

    package enum Phase: Sendable { case running, draining, abandoning }

    /// Why a run stops early. Only signals escalate: a second one abandons the items in flight.
    package enum StopReason: Sendable {
        case signal(Int32)
        /// The time budget (`--deadline`, `--max-duration`) ran out.
        case budget
        /// The run cannot go on (its state database cannot be written, its plan cannot be read).
        case failure(any Error)
    }

    private struct State {
        var phase = Phase.running
        var signal: Int32?
        var budgetReached = false
        var failure: (any Error)?
        var signalsSeen = 0
        var workers: Set<pid_t> = []
    }

    private let state = Mutex(State())

    package var phase: Phase { state.withLock { $0.phase } }
    package var stopSignal: Int32? { state.withLock { $0.signal } }
    package var budgetReached: Bool { state.withLock { $0.budgetReached } }
    /// The first failure that stopped the run.
    package var failure: (any Error)? { state.withLock { $0.failure } }

    /// Drains (no new items; those in flight finish) for a budget or a failure; returns false when
    /// the run was already stopping. A signal drains the first time and abandons the second (its
    /// workers are killed), whatever else stopped the run before.
    @discardableResult
    package func stop(for reason: StopReason) -> Bool {
        let (stopping, victims) = state.withLock { state -> (Bool, Set<pid_t>) in
            switch reason {
            case .signal(let number):
                state.signal = state.signal ?? number
                state.signalsSeen += 1
                guard state.signalsSeen == 1 else {
                    state.phase = .abandoning
                    return (true, state.workers)
                }
                if state.phase == .running { state.phase = .draining }
                return (true, [])
            case .budget: if state.phase == .running { state.budgetReached = true }
            case .failure(let error): state.failure = state.failure ?? error
            }
            guard state.phase == .running else { return (false, []) }
            state.phase = .draining
            return (true, [])
        }
        for pid in victims { kill(pid, SIGKILL) }
        return stopping
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
                control.stop(for: .signal(signalNumber))
                onSignal(signalNumber, control.phase)
            }
            source.resume()
            sources.append(source)
        }
    }

    deinit { sources.forEach { $0.cancel() } }
}
