import Foundation
import Synchronization

/// Collects item events from the worker slots and writes them to the state database in batched
/// transactions, so bookkeeping stays a small part of a run. Outputs the workers staged are
/// published (made durable under their final names, `AtomicFile.publish`) as one batch just before
/// the transaction that records them done; an item is reported to the user only once committed.
/// A crash loses at most the last unflushed batch, whose outputs are simply made again.
final class Recorder: Sendable {
    /// An item whose output a worker staged: done once published.
    struct StagedItem: Sendable {
        let key: String
        let output: AtomicFile.Staged
        let duration: Double
        let warning: String?
    }

    private struct Pending {
        var events: [ItemEvent] = []
        var staged: [StagedItem] = []
    }

    private let store: StateStore
    private let runID: Int64
    private let pending = Mutex(Pending())
    private let wake = NSCondition()
    private let stopped = Mutex(false)
    private let failure = Mutex<(any Error)?>(nil)
    private let flushed = DispatchSemaphore(value: 0)
    private let onCommitted: @Sendable ([ItemEvent]) -> Void
    private let onFailure: @Sendable (any Error) -> Void

    static let flushInterval = 0.2

    /// `onFailure` hears of the first batch that could not be recorded (the disk is full, the
    /// database was deleted), so the run stops rather than work on with nothing recorded.
    init(store: StateStore, runID: Int64, onFailure: @escaping @Sendable (any Error) -> Void = { _ in },
         onCommitted: @escaping @Sendable ([ItemEvent]) -> Void) {
        self.store = store
        self.runID = runID
        self.onFailure = onFailure
        self.onCommitted = onCommitted
        let thread = Thread { [self] in flushLoop() }
        thread.name = "runner.recorder"
        thread.start()
    }

    func record(_ events: [ItemEvent]) {
        pending.withLock { $0.events.append(contentsOf: events) }
    }

    func record(staged items: [StagedItem]) {
        pending.withLock { $0.staged.append(contentsOf: items) }
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
            let taken = pending.withLock { pending in
                defer { pending = Pending() }
                return pending
            }
            var batch = taken.events
            // After the events taken with them: an item's `started` always precedes its result.
            let published = AtomicFile.publish(taken.staged.map(\.output))
            for (item, failure) in zip(taken.staged, published) {
                batch.append(.finished(key: item.key, outputPath: item.output.path,
                                       outcome: failure.map { .failed($0, duration: item.duration) } ?? .done(duration: item.duration, warning: item.warning)))
            }
            do {
                // Records written to a database that is no longer at its path would be lost unseen.
                if !batch.isEmpty { try store.checkStillInPlace() }
                try store.record(batch, runID: runID)
                onCommitted(batch)
            } catch {
                let first = failure.withLock { recorded in
                    defer { recorded = recorded ?? error }
                    return recorded == nil
                }
                if first { onFailure(error) }
            }
            if isStopping { break }
            wake.lock()
            _ = wake.wait(until: Date().addingTimeInterval(Self.flushInterval))
            wake.unlock()
        }
        flushed.signal()
    }
}
