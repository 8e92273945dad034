import Foundation
import Synchronization

/// Collects item events from the worker slots and writes them to the state database in batched
/// transactions, so bookkeeping stays a small part of a run. An item reaches `done` only after
/// its worker reported the output durable, and is reported to the user only once committed; a
/// crash loses at most the last unflushed batch, whose outputs are complete and simply made again.
final class Recorder: Sendable {
    private let store: StateStore
    private let runID: Int64
    private let pending = Mutex<[ItemEvent]>([])
    private let wake = NSCondition()
    private let stopped = Mutex(false)
    private let failure = Mutex<(any Error)?>(nil)
    private let flushed = DispatchSemaphore(value: 0)
    private let onCommitted: @Sendable ([ItemEvent]) -> Void

    static let flushInterval = 0.2

    init(store: StateStore, runID: Int64, onCommitted: @escaping @Sendable ([ItemEvent]) -> Void) {
        self.store = store
        self.runID = runID
        self.onCommitted = onCommitted
        let thread = Thread { [self] in flushLoop() }
        thread.name = "runner.recorder"
        thread.start()
    }

    func record(_ events: [ItemEvent]) {
        pending.withLock { $0.append(contentsOf: events) }
    }

    /// Writes everything still queued and stops the flush thread.
    func close() throws {
        stopped.withLock { $0 = true }
        wake.lock()
        wake.signal()
        wake.unlock()
        flushed.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    private func flushLoop() {
        while true {
            let isStopping = stopped.withLock { $0 }
            let batch = pending.withLock { events in
                defer { events.removeAll(keepingCapacity: true) }
                return events
            }
            do {
                try store.record(batch, runID: runID)
                onCommitted(batch)
            } catch {
                failure.withLock { $0 = $0 ?? error }
            }
            if isStopping { break }
            wake.lock()
            _ = wake.wait(until: Date().addingTimeInterval(Self.flushInterval))
            wake.unlock()
        }
        flushed.signal()
    }
}
